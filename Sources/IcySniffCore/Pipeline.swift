/// Options of one analysis.
public struct PipelineOptions: Sendable {
    public var http = HTTPParserOptions()
    public var reassembly = ReassemblyLimits()
    /// Live captures: flush connections idle for this long (seconds of capture time).
    public var idleFlushSeconds: Double = 120
    /// TLS secrets to decrypt with (`--keylog`).
    public var keyLog: KeyLog? = nil
    /// Decrypt TLS application data on a thread of its own once this many bytes of records came
    /// (`DecryptionQueue`); nil: as records come, on the pipeline's thread. For files: the
    /// outputs of a TLS connection may then come a few batches later. Not for live captures,
    /// whose rows must come as they happen.
    public var decryptOnSecondThreadAfter: Int? = nil
    /// Where the device table puts the names it learns, for `--client NAME`.
    public var deviceDirectory: DeviceDirectory? = nil
    public init() {}
}

/// How reading one capture ended.
public enum SourceOutcome: Equatable, Sendable {
    case completed
    /// The capture is damaged from some point on; everything before it was analysed.
    case damaged(String)
    /// The capture's link type is not supported; nothing was analysed.
    case unsupportedLinkType
    /// Stopped by the user (signal, packet count, duration).
    case interrupted
}

/// Connects the stages for one stream of packets, on one thread:
/// Capture → Decode → Reassembly (TCP) → Session (TLS, HTTP/1.x, HTTP/2) → Analysis → the sink,
/// and Decode → QUIC (UDP) → HTTP/3 → Analysis.
///
/// The sink gets transactions as they complete, without a cache verdict: a run that writes
/// outputs puts a `CacheJudgingSink` first (`SinkFactory` does).
public final class Pipeline {
    private let table: ConnectionTable<SessionSlot>
    /// QUIC connections, found among the UDP datagrams on any port.
    private let quic: QUICTracker
    /// Both tables, for what the pipeline asks of every transport alike (`TransportTable`).
    private var transports: [any TransportTable] { [table, quic] }
    private let emitter: TransactionEmitter
    private let dns = DNSTracker()
    /// Who is who (`DeviceTable`): from every packet's sender and receiver, DHCP and mDNS; the
    /// `device` of transactions and connections, and `--devices`' list.
    public let devices = DeviceTable()
    private let options: PipelineOptions
    /// TLS secrets: `--keylog` files, and the key logs embedded in the captures read.
    private let keyLog: KeyLog
    /// What was counted so far; `stats` adds the figures the stages keep themselves.
    private var counts = RunStats()
    /// The run's figures so far (complete after `finish`).
    public var stats: RunStats {
        var s = counts
        s.connections = table.connectionsSeen
        s.transactions = emitter.emitted
        if devices.devicesNotKept > 0 { s.count(.devicesLimited, by: UInt64(devices.devicesNotKept)) }
        return s
    }
    private var lastIdleCheck: Timestamp = .zero
    private let decryption: DecryptionQueue?

    /// `sessions` chooses what runs on each TCP connection (default: `StandardSessionFactory`, by
    /// content: TLS, HTTP/1.x, HTTP/2, proxy tunnels).
    public init(sink: TransactionSink, options: PipelineOptions = PipelineOptions(), sessions: (any SessionFactory)? = nil) {
        var options = options
        if options.http.keepBodies && options.http.bodyBudget == nil { options.http.bodyBudget = BodyBudget() }
        if options.http.webSocketBudget == nil { options.http.webSocketBudget = BodyBudget() }
        self.options = options
        self.sink = sink
        let emitter = TransactionEmitter(sink: sink, dns: dns)
        self.emitter = emitter
        emitter.devices = devices
        devices.directory = options.deviceDirectory
        let keyLog = options.keyLog ?? KeyLog(text: "")
        self.keyLog = keyLog
        let decryption = options.decryptOnSecondThreadAfter.map { DecryptionQueue(startAfter: $0) }
        self.decryption = decryption
        var standard = StandardSessionFactory(options: options.http, keyLog: keyLog)
        standard.decryption = decryption
        let factory: any SessionFactory = sessions ?? standard
        table = ConnectionTable(limits: options.reassembly, speakerHint: { factory.speakerHint($0) },
                                opensAsClient: { factory.opensAsClient($0) }) { _ in
            SessionSlot(factory: factory, emitter: emitter)
        }
        let table = self.table
        quic = QUICTracker(keyLog: keyLog, emitter: emitter, options: options.http, decryption: decryption, nextID: { table.takeID() })
        quic.giveBackID = { table.giveBack($0) }
        // Half as many QUIC connections as TCP ones: each holds its Initial keys' cipher contexts
        // (about 6 KiB a connection against TCP's 1-5), and a browser multiplexes one per origin.
        quic.maxConnections = max(16, options.reassembly.maxConnections / 2)
        quic.idleTimeout = Int64(options.idleFlushSeconds * 1e9)
        table.onFinished = { [unowned self] connection in
            // After what its TLS session still has to do with records being decrypted.
            if let decryption { decryption.later { self.connectionFinished(connection) } } else { connectionFinished(connection) }
        }
        // The tracker already waits for the connection's packets on the decryption thread.
        quic.onFinished = { [unowned self] connection in connectionFinished(connection) }
        quic.onUnmatched = { [unowned self] weird in counts.count(weird) }
        quic.onUnreadableVersion = { [unowned self] version in counts.countUnreadable(quicVersion: version) }
    }

    private unowned let sink: TransactionSink

    /// A connection is over (TCP or QUIC): counted, then handed to the outputs.
    private func connectionFinished(_ connection: Connection) {
        connection.captureName = emitter.captureName
        for (weird, n) in connection.weirds { counts.count(weird, by: UInt64(n)) }
        counts.countEncryption(of: connection)
        devices.attribute(connection)
        sink.connectionFinished(connection)
    }

    deinit { decryption?.stop() }

    /// TLS records decrypted on the second thread (`decryptOnSecondThreadAfter`) so far.
    var recordsDecryptedOnSecondThread: Int { decryption?.recordsQueued ?? 0 }

    /// Runs a capture to its end (or until `shouldStop` answers true). Connections stay open
    /// across calls, so several files of one capture can be read in turn; call `finish` at the end.
    public func run(_ source: PcapSource, maxPackets: UInt64? = nil, shouldStop: () -> Bool = { false }) -> SourceOutcome {
        emitter.captureName = source.name
        var decoder = PacketDecoder(linkType: source.linkType)
        var decoderDLT = source.dlt
        defer {
            // Datagrams still waiting for fragments at the end of this input never complete.
            decoder.flushFragments()
            collectDecoderCounts(&decoder)
        }
        let live = source.isLive
        // Live captures flush idle connections sooner, so their transactions show up.
        let idleLimit = live ? Int64(options.idleFlushSeconds * 1e9) : nil
        var count: UInt64 = 0
        while true {
            if live || count & 0x3ff == 0, shouldStop() { return .interrupted }
            switch source.next() {
            case .packet(let packet):
                guard source.linkType.isSupported || source.hasSeveralLinkTypes else { return .unsupportedLinkType }
                if source.packetDLT != decoderDLT {
                    // A pcapng file whose interfaces have different link types.
                    decoderDLT = source.packetDLT
                    decoder.linkType = LinkType(dlt: decoderDLT)
                }
                if source.pendingSecrets != nil, let blocks = source.takeSecrets() {
                    // Decryption Secrets Blocks come before the packets they decrypt.
                    for secrets in blocks { keyLog.add(secrets) }
                }
                count += 1
                process(packet, decoder: &decoder)
                decryption?.cycle()
                if packet.timestamp.nanoseconds - lastIdleCheck.nanoseconds > 10_000_000_000 {
                    // Every 10 s of capture time: idle and half-open connections go (files and live).
                    lastIdleCheck = packet.timestamp
                    for t in transports { t.expire(now: packet.timestamp, idleLongerThan: idleLimit) }
                    collectDecoderCounts(&decoder)
                }
                if let maxPackets, counts.packets >= maxPackets { return .interrupted }
            case .timeout:
                // A quiet live capture: packet time stands still, so idle connections are ended
                // by the clock (the kernel's packet timestamps are the same realtime clock).
                if let idleLimit {
                    let now = Timestamp.now()
                    if now.nanoseconds - lastIdleCheck.nanoseconds > 10_000_000_000 {
                        lastIdleCheck = now
                        for t in transports { t.expire(now: now, idleLongerThan: idleLimit) }
                        collectDecoderCounts(&decoder)
                    }
                }
                continue
            case .end:
                return .completed
            case .failed(let message):
                // A read a signal interrupted (an idle pipe) is the stop, not damage.
                return shouldStop() ? .interrupted : .damaged(message)
            }
        }
    }

    @inline(__always)
    public func process(_ packet: CapturedPacket, decoder: inout PacketDecoder) {
        counts.packets &+= 1
        counts.bytes &+= UInt64(packet.bytes.count)
        if counts.firstPacket == nil { counts.firstPacket = packet.timestamp }
        counts.lastPacket = packet.timestamp
        switch decoder.decode(packet) {
        case .tcp(let segment):
            counts.tcpSegments &+= 1
            let link = LinkSource.addresses(of: packet.bytes, linkType: decoder.linkType)
            // The receiver only for a sender not seen lately: a flow's later packets skip it.
            if !devices.observe(mac: link.source, address: segment.source.address, at: segment.timestamp) {
                devices.observe(destination: link.destination, address: segment.destination.address, at: segment.timestamp)
            }
            table.ingest(segment)
        case .udp(let datagram):
            let mac = LinkSource.address(of: packet.bytes, linkType: decoder.linkType)
            devices.observe(mac: mac, address: datagram.source.address, at: datagram.timestamp)
            devices.observeService(datagram, mac: mac)
            udp(datagram)
        case .neighbor(let n):
            // Not traffic icy-sniff analyses (counted as skipped, as before), but who holds an
            // IPv6 address: the device table's.
            counts.skippedPackets &+= 1
            devices.observe(n, mac: LinkSource.address(of: packet.bytes, linkType: decoder.linkType))
        case .skipped:
            counts.skippedPackets &+= 1
        case .skippedNamed(let weird):
            counts.skippedPackets &+= 1
            counts.count(weird)
        case .malformed(let weird):
            counts.malformedPackets &+= 1
            counts.count(weird)
        }
    }

    /// Counts the decoder keeps between packets: expired fragments, decoded packets it noted.
    private func collectDecoderCounts(_ decoder: inout PacketDecoder) {
        let n = decoder.takeExpiredFragments()
        if n > 0 { counts.count(.fragmentTimeout, by: UInt64(n)) }
        for version in decoder.takeLostQUICVersions() { counts.countUnreadable(quicVersion: version) }
        for (weird, n) in decoder.takeNotes() { counts.count(weird, by: UInt64(n)) }
        collectTableCounts()
    }

    /// Feeds one TCP segment that was decoded elsewhere (tests, other capture front ends).
    public func ingest(_ segment: TCPSegment) {
        counts.packets &+= 1
        counts.tcpSegments &+= 1
        if counts.firstPacket == nil { counts.firstPacket = segment.timestamp }
        counts.lastPacket = max(counts.lastPacket ?? segment.timestamp, segment.timestamp)
        table.ingest(segment)
    }

    /// Feeds one UDP datagram that was decoded elsewhere (tests, other capture front ends).
    public func ingest(_ datagram: UDPDatagram) {
        counts.packets &+= 1
        if counts.firstPacket == nil { counts.firstPacket = datagram.timestamp }
        counts.lastPacket = max(counts.lastPacket ?? datagram.timestamp, datagram.timestamp)
        udp(datagram)
    }

    /// A UDP datagram: QUIC's if it belongs to a QUIC connection, else looked at for DNS timing.
    @inline(__always)
    private func udp(_ datagram: UDPDatagram) {
        counts.udpDatagrams &+= 1
        if !quic.observe(datagram) { dns.observe(datagram) }
    }

    /// TCP connections whose analysis began mid-stream so far (see `ConnectionTable`).
    public var connectionsPickedUpMidstream: UInt64 { table.connectionsPickedUpMidstream }

    /// Ends every open connection now, each flagged `weird` (a capture set whose next piece does
    /// not continue this one; nil: separate captures read one after another). Returns how many
    /// there were.
    @discardableResult
    public func breakContinuity(marking weird: Weird?) -> Int {
        let open = openConnections
        for t in transports { t.flushAll(at: counts.lastPacket ?? .zero, marking: weird) }
        return open
    }

    /// Segments the connection table dropped as retransmissions of ended connections.
    private func collectTableCounts() {
        let late = table.takeRetransmissionsAfterEnd()
        if late > 0 { counts.count(.retransmissionAfterEnd, by: late) }
    }

    /// Ends every open connection: open transactions are emitted, flagged as partial.
    public func finish() {
        collectTableCounts()
        for t in transports { t.flushAll(at: counts.lastPacket ?? .zero, marking: nil) }
        decryption?.drain()
        decryption?.stop()
    }

    public var openConnections: Int { transports.reduce(0) { $0 + $1.openConnections } }

    /// Bytes charged to the shared budget of waiting requests now (`StateBudget`).
    public var budgetUsed: Int { table.budget.used }

    /// The run's counts with the TLS and QUIC connections still open counted too: a live
    /// capture's `--stats` line shows the encrypted connections from their handshake on, not
    /// only once they end (a phone's HTTPS is never silence).
    public var statsSoFar: RunStats {
        var s = stats
        for t in transports { t.forEachOpen { s.countEncryption(of: $0) } }
        return s
    }
}
