import IcySniffCore
#if canImport(Glibc)
import Glibc
#endif

/// Runs one analysis: opens the inputs, drives the pipeline, writes the output, and turns what
/// happened into diagnostics and an exit code. The command types stay thin.
struct Frontend {
    var input: InputOptions
    var output: OutputOptions
    var filter: TransactionFilter
    /// TLS secrets (`--keylog`), shared by every pipeline of the run.
    var keyLog: KeyLog? = nil
    /// The capture sets a file run reads (from `-r`, grouped by `CaptureList`).
    var sets: [CaptureSet] = []

    struct Failure: Error { var message: String; var code: Int32 }

    enum Exit {
        static let ok = ExitStatus.ok.rawValue
        static let damaged = ExitStatus.damaged.rawValue
        static let badInput = ExitStatus.badInput.rawValue
        static let outputFailed = ExitStatus.outputFailed.rawValue
    }

    func run() -> Int32 {
        if input.interface == nil {
            let expanded = CaptureList.expand(input.read, join: !input.noJoin, joinListed: output.batch.outDir == nil)
            for problem in expanded.problems { Diagnostics.error(problem) }
            for warning in expanded.warnings { Diagnostics.warning(warning) }
            if output.listSets { return listSets(expanded) }
            if expanded.sets.isEmpty {
                if expanded.problems.isEmpty { Diagnostics.error("no captures found in \(input.read.joined(separator: ", "))") }
                return Exit.badInput
            }
            // --connections lists the connections of all captures in one table (no per-capture outputs).
            // --serve: one pipeline reads every set in turn, so the page numbers one run.
            if !output.connections && !output.devices && output.serve == nil && (expanded.sets.count > 1 || output.batch.outDir != nil || expanded.fromDirectory) {
                if input.write != nil {
                    Diagnostics.error("-w with -r writes the packets of one capture (or of one rotated set): give one")
                    return 64
                }
                let code = BatchRunner(frontend: self, captures: expanded.sets, skippedNonCaptures: expanded.skippedNonCaptures).run()
                return expanded.problems.isEmpty ? code : max(code, Exit.badInput)
            }
            var single = self
            single.sets = expanded.sets
            let code = single.runSingle()
            return expanded.problems.isEmpty ? code : max(code, Exit.badInput)
        }
        return runSingle()
    }

    /// `--list-sets`: the units of work, as NDJSON.
    func listSets(_ list: CaptureList) -> Int32 {
        let out = OutputFile()
        for set in list.sets {
            let w = JSONWriter(indent: 0)
            w.beginObject()
            w.string("name", set.name)
            w.key("pieces"); w.beginArray(); for p in set.paths { w.string(p) }; w.endArray()
            w.bool("joinedByName", set.joinedByName)
            w.key("missing"); w.beginArray(); for p in set.pieces { for n in p.missingBefore { w.int(n) } }; w.endArray()
            w.endObject()
            out.write(w.array + [0x0A])
        }
        do { try out.commit() } catch {
            Diagnostics.error(error.message)
            return Exit.outputFailed
        }
        return list.problems.isEmpty ? Exit.ok : Exit.badInput
    }

    var exportOptions: ExportOptions {
        var exportOptions = ExportOptions()
        exportOptions.includeBodies = output.bodies
        exportOptions.keepSecrets = output.keepSecrets
        exportOptions.harEstimates = output.harEstimates
        exportOptions.pretty = !output.compact
        return exportOptions
    }

    var pipelineOptions: PipelineOptions {
        var pipelineOptions = PipelineOptions()
        pipelineOptions.http.keepBodies = output.bodies
        // WebSocket messages: their data with --bodies (as bodies), the start of each text
        // message for -V to show; otherwise sizes only.
        pipelineOptions.http.webSocket.keptBytes = output.bodies ? 1 << 20 : output.namedFormat == .heads ? 120 : 0
        pipelineOptions.keyLog = keyLog
        pipelineOptions.deviceDirectory = filter.directory
        if let n = input.maxConnections { pipelineOptions.reassembly.maxConnections = n }
        return pipelineOptions
    }

    var fields: [Field] {
        output.fields.map { Field.parseList($0).compactMap { Field(rawValue: $0) } } ?? Field.defaultColumns
    }

    /// One capture, or a live interface, into one output.
    func runSingle() -> Int32 {
        // Live: the interface is opened first, as root; with -Z privileges are dropped before any
        // output file is created.
        var live: LiveCapture? = nil
        if let interface = input.interface {
            switch LiveCapture.open(interface: interface, input: input) {
            case .success(var capture):
                capture.quiet = output.quiet
                live = capture
                // As tcpdump says it, so that a user sees at once what is being captured.
                if !output.quiet {
                    let s = capture.source
                    Diagnostics.info("listening on \(interface), link-type \(s.linkTypeName) (\(s.linkTypeDescription)), snapshot length \(s.snaplen) bytes\(input.filter.map { ", filter '\($0)'" } ?? "")")
                }
            case .failure(let failure):
                Diagnostics.error(failure.message)
                return failure.code
            }
        }

        // --serve: the page is up before the first packet.
        var web: WebView? = nil
        // Where the run's device names go for readers on other threads: the filter's (--client
        // NAME) and the web view's, one directory for both.
        var deviceDirectory = filter.directory
        if let (host, port) = (try? output.serveAddress()) ?? nil {
            let inputName = input.interface.map { "interface \($0)" } ?? input.read.joined(separator: ", ")
            let directory = deviceDirectory ?? DeviceDirectory()
            deviceDirectory = directory
            switch WebView.start(host: host, port: port, live: live != nil, bodies: output.bodies, input: inputName, devices: directory) {
            case .success(let view):
                web = view
                view.announce()
            case .failure(let failure):
                Diagnostics.error(failure.message)
                return failure.code
            }
        }
        defer { web?.stop() }

        // -G/-C/-W, or a live capture into a file (SIGHUP begins a new one): a rotated output.
        let rotation = (try? output.rotation.policy()) ?? nil
        let rotates = output.outputPath != nil && (rotation != nil || live != nil)
        if live != nil { Signals.installHangup(reopens: output.outputPath != nil || input.write != nil) }

        // --serve alone: the page is the output (a table too only when asked for).
        let writesNothing = web != nil && output.outputPath == nil && output.namedFormat == nil
        let out: OutputFile?
        do {
            out = rotates || writesNothing ? nil : try output.outputPath.map { path throws(OutputError) in try OutputFile(path: path) } ?? OutputFile()
        } catch {
            Diagnostics.error(error.message)
            return Exit.outputFailed
        }

        let format: OutputFormat = output.namedFormat ?? output.formatFromPath ?? (out?.isTerminal == true ? .table : .tsv)
        var factory = sinkFactory(format: format)
        // The terminal table names each request's device (its client cell) once the run knows it.
        if format == .table {
            if deviceDirectory == nil { deviceDirectory = DeviceDirectory() }
            factory.deviceNames = deviceDirectory
        }
        let tally = filter.isEmpty || output.connections ? nil : FilterTally()
        factory.filterTally = tally
        // Live: every row reaches the terminal or the pipe as soon as its response completes.
        factory.flushEachRow = input.interface != nil
        factory.rotation = rotation
        if let web {
            let feed = FeedSink(options: exportOptions, consumer: web.store)
            web.store.useEntries(feed.entries)
            factory.feed = feed
        }
        let head: TransactionSink, sink: OutputSink
        var rotating: RotatingOutput? = nil
        if writesNothing || output.devices {
            (head, sink) = factory.makeWithoutOutput()
        } else if rotates, let path = output.outputPath {
            let made = factory.make(rotating: path)
            (head, sink, rotating) = (made.head, made.output, made.output)
            made.output.rotator.onError = { Diagnostics.error($0) }
            // Without -G the first file is opened now, so a path that cannot be written is said
            // before the capture starts.
            if let problem = made.output.prepare() {
                Diagnostics.error(problem)
                return Exit.outputFailed
            }
        } else if let out {
            (head, sink) = factory.make(writingTo: out)
        } else {
            return Exit.outputFailed
        }

        // Files: the export stage (cache judgement, filter, writer) runs on a second core, beside
        // reading, reassembly and parsing.
        var runOptions = AnalysisRun.Options()
        runOptions.pipeline = pipelineOptions
        runOptions.pipeline.deviceDirectory = deviceDirectory
        runOptions.captureFilter = input.filter
        runOptions.fileReader = input.fileReader
        runOptions.maxPackets = input.count
        runOptions.useSecondCore = live == nil && !output.connections
        let run = AnalysisRun(sink: head, options: runOptions)
        defer { run.abandon() }
        let pipeline = run.pipeline
        if let path = output.leases { let devices = pipeline.devices
            guard let text = FileSystem.readText(path) else {
                Diagnostics.error("--leases: cannot read '\(path)': \(String(cString: strerror(errno)))")
                return Exit.badInput
            }
            if devices.load(leases: text) == 0 { Diagnostics.warning("--leases: '\(path)' holds no lease with a link-layer address (dnsmasq's or ISC dhcpd's format)") }
        }
        let upkeep = Upkeep(statsSeconds: input.statsSeconds)
        run.driver.shouldStop = {
            if upkeep.heartbeat != nil { upkeep.tick(pipeline: pipeline, source: nil, live: false, now: Heartbeat.monotonicSeconds()) }
            return Signals.stop
        }
        var packetWriter: PacketWriter? = nil
        if let path = input.write {
            let writer = PacketWriter(path: path, rotation: rotation ?? RotationPolicy()) { Diagnostics.error($0) }
            if let problem = writer.prepare(now: Timestamp.now()) {
                Diagnostics.error(problem)
                return Exit.outputFailed
            }
            packetWriter = writer
        }
        if let live {
            live.source.saver = packetWriter
            upkeep.packets = packetWriter
            upkeep.rotating = rotating
        } else {
            run.driver.packetWriter = packetWriter
        }
        // An early return still puts the packets written so far in place.
        defer { _ = packetWriter?.close() }
        let outcomes = run.run(sets)
        var code = ExitStatus.ok
        var comments: [String] = []
        for outcome in outcomes {
            if let note = outcome.continuity {
                Diagnostics.warning(note)
                comments.append(note)
            }
            Diagnostics.show(outcome.diagnostic(signalled: Signals.stop))
            if let comment = outcome.outputComment(signalled: Signals.stop) { comments.append(comment) }
            code = max(code, outcome.exitStatus(strict: input.strict))
            if outcome.stopsRun { return code.rawValue }
        }
        if let live {
            code = max(code, ExitStatus(rawValue: live.run(pipeline: pipeline, upkeep: upkeep)) ?? .damaged)
        }
        // Not one input could be read: the error lines say why, and no empty table or HAR is
        // written (an empty capture, by contrast, gives a valid empty output).
        if !outcomes.contains(where: \.analysed) && live == nil && code != .ok && !sets.isEmpty { return code.rawValue }
        run.finish()
        // --stats, live: a last line with the final figures (the last interval's may predate
        // the transactions written at the stop).
        if let live { upkeep.heartbeat?.beat(pipeline: pipeline, source: live.source, now: Heartbeat.monotonicSeconds()) }
        if let writer = packetWriter {
            if !writer.close() {
                if writer.lost > 0 { Diagnostics.error("-w: \(writer.lost) packets could not be written") }
                code = max(code, .outputFailed)
            }
            if writer.otherLinkType > 0 {
                Diagnostics.warning("-w: \(writer.otherLinkType) packets of another link type than the first were not written to '\(writer.path)'")
            }
        }
        var devicesLine: String? = nil
        if output.devices, let out { let devices = pipeline.devices
            let list = devices.summaries()
            DeviceListWriter.write(list, format: format, to: out)
            let n = "\(list.count) device\(list.count == 1 ? "" : "s")"
            devicesLine = list.isEmpty
                ? "icy-sniff: no devices: no connection's client, and no DHCP, mDNS or NetBIOS message of one, was seen"
                : devices.sawLinkLayer
                ? "icy-sniff: \(n), by link-layer address" + (list.contains { $0.mac == nil } ? " (those without one, by client address)" : "")
                : "icy-sniff: \(n), by client address: the capture has no link-layer addresses (raw IP, loopback or a tunnel)"
        }
        // A HAR names the devices its entries' `_device` addresses are (log._devices).
        if let har = sink as? HAROutput { har.writer.devices = pipeline.devices.summaries() }
        do {
            try sink.finish(comment: comments.isEmpty ? nil : comments.joined(separator: "; "))
            try out?.commit()
        } catch {
            Diagnostics.error(error.message)
            return Exit.outputFailed
        }
        if !output.quiet {
            let estimates: Summary.EstimatesShown
            if writesNothing { estimates = .webView }
            else if output.devices { estimates = .notInFormat }
            else if output.connections { estimates = .counted }
            else if format == .har { estimates = output.harEstimates ? .harEntries : .notInHAR }
            else if format == .heads || format == .websocket { estimates = .notInFormat }
            else { estimates = filter.choosesOnlyDevices ? .rows : .filteredOut }
            Summary.print(pipeline.stats, keyLog: keyLog, shown: tally?.kept, estimates: estimates)
            let names = pipeline.devices.allNames
            for pattern in filter.deviceNames where !names.contains(where: { DeviceDirectory.glob(pattern, matches: $0) }) {
                Diagnostics.warning("--client '\(pattern)': no device gave itself that name (DHCP, mDNS, --leases); --devices lists the names seen")
            }
            if let devicesLine { Diagnostics.info(devicesLine) }
        }
        // Reading files stopped by a signal: exit 130 (a live capture ends that way normally).
        if Signals.stop && live == nil { code = max(code, .interrupted) }
        // --serve on files: the page stays until Ctrl-C (which then ends the run normally).
        if let web, live == nil { web.serveUntilStopped(transactions: pipeline.stats.transactions) }
        return code.rawValue
    }

    /// The sink chain of this run's options, for one output of `format`.
    func sinkFactory(format: OutputFormat) -> SinkFactory {
        var factory = SinkFactory(format: format)
        factory.options = exportOptions
        factory.fields = fields
        if output.connections { factory.connectionFields = output.fields.map(Field.parseList) }
        factory.filter = filter
        factory.connections = output.connections
        return factory
    }
}

enum Summary {
    /// Where the exchanges estimated from encrypted records went, as the summary says it.
    enum EstimatesShown: String {
        /// Rows of the table, TSV, CSV or NDJSON (`TabularOutput.writesEncrypted`).
        case rows = "\"inferred\" rows"
        /// A filter chose transactions (not only devices): estimates are not among them.
        case filteredOut = "not listed: a filter chose the transactions"
        /// A HAR holds them only when asked: its consumers replay entries.
        case notInHAR = "not in the HAR: --har-estimates adds them as entries"
        case harEntries = "HAR entries with _inferred"
        case notInFormat = "not in this format: --format ndjson lists them"
        case counted = "not in --connections: --format ndjson lists them"
        case webView = "rows in the web view"
    }

    /// `keyLog`: the key log named with `--keylog`: what stays encrypted had no secrets in it,
    /// and what it held is said (how many connections it has secrets for, from how many lines,
    /// how many lines were not key log lines), so a key log of other connections is told from
    /// one that is not a key log at all.
    /// `shown`: the transactions a filter kept, when one was given ("5 of 22 HTTP transactions
    /// shown": the rows above are not all there were).
    /// `estimates`: where the output put the exchanges estimated from encrypted records.
    static func print(_ stats: RunStats, keyLog: KeyLog? = nil, shown: UInt64? = nil, estimates: EstimatesShown = .rows) {
        let advice: String
        /// "1 TCP connection", "2 TCP connections".
        func count<N: BinaryInteger>(_ n: N, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
        if let keyLog {
            let bad = keyLog.malformedLines
            var held: String
            if keyLog.count == 0 {
                held = "the key log holds no secrets" + (bad > 0 ? ": \(count(bad, "line")) of it \(bad == 1 ? "is" : "are") not key log lines" : "")
            } else {
                // Other connections' secrets, or not all of these connections' (a handshake's
                // secrets without the traffic secrets): either way not what opens their data.
                held = "the key log lacks their traffic secrets: it holds secrets of \(count(keyLog.count, "connection")), from \(count(keyLog.secretLines, "line"))"
                if bad > 0 { held += ", and \(count(bad, "line")) \(bad == 1 ? "is" : "are") not key log lines" }
            }
            advice = held + "; their handshakes are in --connections and the HAR's _connections"
        } else {
            advice = "--keylog FILE decrypts them (docs/KEYS.md: how to get one); their handshakes are in --connections and the HAR's _connections"
        }
        var line = "icy-sniff: \(count(stats.packets, "packet")), \(count(stats.connections, "TCP connection")), "
            + (shown.map { "\($0) of " + count(stats.transactions, "HTTP transaction") + " shown (the filter kept them)" } ?? count(stats.transactions, "HTTP transaction"))
        for (noun, total, decrypted) in [("TLS connection", stats.tlsConnections, stats.tlsDecrypted),
                                         ("QUIC connection", stats.quicConnections, stats.quicDecrypted)] where total > 0 {
            line += ", " + count(total, noun)
            if decrypted > 0 { line += " (\(decrypted) decrypted)" }
            if total > decrypted { line += "; \(total - decrypted) encrypted (\(advice))" }
        }
        if stats.inferredExchanges > 0 {
            line += "; \(count(stats.inferredExchanges, "exchange")) estimated from encrypted records"
                + " (\(estimates == .rows && shown != nil ? "\"inferred\" rows, of the devices chosen" : estimates.rawValue))"
        }
        line += anomalies(stats)
        Diagnostics.info(line)
    }

    /// The end of a summary line: packets not decoded, the commonest anomalies, QUIC versions not
    /// read ("" when there were none). A run's line and a batch's line end with it.
    static func anomalies(_ stats: RunStats) -> String {
        var text = ""
        func byCount(_ a: (key: Weird, value: UInt64), _ b: (key: Weird, value: UInt64)) -> Bool {
            (b.value, a.key.rawValue) < (a.value, b.key.rawValue)
        }
        // Packets not decoded, by reason: never dropped silently. ARP, ICMP, 802.11 management
        // frames and the like are not counted: they are not traffic icy-sniff analyses.
        let notDecoded = stats.weirds.filter { $0.key.meansPacketNotDecoded }.sorted(by: byCount)
        if !notDecoded.isEmpty {
            let total = notDecoded.reduce(0) { $0 + $1.value }
            text += "; \(total) packets not decoded (" + notDecoded.map { "\($0.key.rawValue)×\($0.value)" }.joined(separator: ", ") + ")"
        }
        let notable = stats.weirds.filter { $0.key != .midstreamPickup && !$0.key.meansPacketNotDecoded }.sorted(by: byCount).prefix(6)
        if !notable.isEmpty {
            text += "; anomalies: " + notable.map { "\($0.key.rawValue)×\($0.value)" }.joined(separator: ", ")
        }
        if !stats.unreadableQUICVersions.isEmpty {
            // What tshark shows of such a packet: its version (the rest is encrypted or lost).
            text += "; QUIC Initials not read: " + stats.unreadableQUICVersionNames.map { "\($0.name)×\($0.count)" }.joined(separator: ", ")
        }
        return text
    }
}
