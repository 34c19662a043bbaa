/// Receives finished transactions (and connections) from the analysis, in completion order.
public protocol TransactionSink: AnyObject {
    func consume(_ transaction: Transaction)
    /// A TLS or QUIC handshake's ServerHello was seen: the connection's version, cipher and SNI
    /// are known while it is still open (the web view and the transaction outputs show an
    /// encrypted connection from then on). A value: it may go to another thread.
    func connectionSecured(_ secured: SecuredConnection)
    func connectionFinished(_ connection: Connection)
}

extension TransactionSink {
    public func connectionSecured(_ secured: SecuredConnection) {}
}

/// What a TLS or QUIC connection showed when its ServerHello was read, and whether a key opens
/// it. A value taken then: the connection itself stays the pipeline's, still changing.
public struct SecuredConnection: Sendable {
    public enum Keys: Sendable {
        /// The key log has its secrets: its transactions will show.
        case found
        /// No key opens it (none given, none for it, or a suite icy-sniff cannot decrypt).
        case none
        /// A live key log may still write them: told again (`none`) if the wait ends without.
        case awaited
    }
    public var summary: ConnectionSummary
    public var keys: Keys
    /// The capture being read (a batch's merged rows name it).
    public var captureName: String

    init(_ connection: Connection, keys: Keys, captureName: String) {
        summary = ConnectionSummary(connection)
        self.keys = keys
        self.captureName = captureName
    }
}

extension Connection {
    /// It carried TLS (or QUIC) and no key opened it: the transaction outputs show it as rows of
    /// an encrypted connection (`TableWriter.writeEncrypted`). The one place that decides it.
    public var encryptedWithoutKeys: Bool {
        guard let tls, weirds[.tlsAnsweredInPlainHTTP] == nil else { return false }
        return !(quic?.decrypted ?? tls.decrypted)
    }
}

/// Completes transactions (timings, DNS) and hands them to the sink; shared by all connections
/// of one pipeline.
public final class TransactionEmitter {
    private let sink: TransactionSink
    let dns: DNSTracker
    private var sequence: UInt64 = 0
    var captureName = ""
    private(set) var emitted: UInt64 = 0
    /// `--devices`: each transaction counted for its connection's device.
    var devices: DeviceTable? = nil
    /// The device of the connection whose transaction came last.
    private var deviceOf: (connection: UInt64, mac: UInt64) = (0, 0)

    init(sink: TransactionSink, dns: DNSTracker) {
        self.sink = sink
        self.dns = dns
    }

    /// Answers the transaction's `sequence` (once handed to the sink, the transaction is the
    /// sink's: it may be on another thread).
    @discardableResult
    func emit(_ t: Transaction) -> UInt64 {
        sequence += 1
        t.sequence = sequence
        t.captureName = captureName
        var lookup: DNSLookup? = nil
        if t.depth == 1, let begin = t.connection.setup.start {
            lookup = dns.lookup(host: t.host, address: t.connection.server.address, before: begin)
        }
        t.timings = TransactionTimings.compute(for: t, dns: lookup)
        emitted += 1
        if let devices {
            devices.countRequest(on: t.connection.id)
            // One look-up per connection, not per transaction (keep-alive's come together).
            if t.connection.id != deviceOf.connection {
                deviceOf = (t.connection.id, devices.mac(of: t.connection.client.address, at: t.connection.setup.start ?? t.startTime))
                // A hint of who the device is: the User-Agent of a connection's first request.
                if let agent = t.request?.headers.first(.userAgent) { devices.noteAgent(agent, of: deviceOf.mac) }
            }
            t.connection.deviceMAC = deviceOf.mac
        }
        let number = sequence
        t.request?.releaseBodyBudget()
        t.response?.releaseBodyBudget()
        t.webSocket?.releaseBudget()
        sink.consume(t)
        return number
    }

    /// `connectionSecured`: a TLS or QUIC ServerHello was read (once per connection; again with
    /// `.none` when keys awaited did not come).
    func secured(_ connection: Connection, keys: SecuredConnection.Keys) {
        if let devices { connection.deviceMAC = devices.mac(of: connection.client.address, at: connection.began) }
        sink.connectionSecured(SecuredConnection(connection, keys: keys, captureName: captureName))
    }
}

/// The one place where cache freshness is judged (RFC 9111, `CacheTracker`): every transaction,
/// in completion order, before any filter or writer sees it, so that every output of a run gives
/// the same verdict. The sink chain a run builds (`SinkFactory`) starts here.
public final class CacheJudgingSink: TransactionSink {
    public let tracker: CacheTracker
    private let next: TransactionSink

    public init(next: TransactionSink, tracker: CacheTracker = CacheTracker()) {
        self.next = next
        self.tracker = tracker
    }

    public func consume(_ transaction: Transaction) {
        tracker.judge(transaction)
        next.consume(transaction)
    }

    public func connectionSecured(_ secured: SecuredConnection) { next.connectionSecured(secured) }
    public func connectionFinished(_ connection: Connection) { next.connectionFinished(connection) }
}

/// Passes on the transactions a `TransactionFilter` lets through, and the connections of the
/// devices it names (all connections when it names none).
/// How many transactions a filter kept: the summary says "5 of 22 HTTP transactions shown"
/// (the 22 are the run's). Counted on the thread that runs the sinks, read once it has finished.
public final class FilterTally: @unchecked Sendable {
    public internal(set) var kept: UInt64 = 0
    public init() {}
}

public final class FilteringSink: TransactionSink {
    private let filter: TransactionFilter
    private let next: TransactionSink
    private let tally: FilterTally?

    public init(filter: TransactionFilter, next: TransactionSink, tally: FilterTally? = nil) {
        self.filter = filter
        self.next = next
        self.tally = tally
    }

    public func consume(_ transaction: Transaction) {
        if filter.matches(transaction) {
            tally?.kept += 1
            next.consume(transaction)
        }
    }

    public func connectionSecured(_ secured: SecuredConnection) {
        if filter.matchesClient(secured.summary.client.address, device: secured.summary.deviceMAC) { next.connectionSecured(secured) }
    }

    public func connectionFinished(_ connection: Connection) {
        // Connections pass, but not those of other devices when the filter names devices.
        if filter.matchesClient(connection.client.address, device: connection.deviceMAC) { next.connectionFinished(connection) }
    }
}
