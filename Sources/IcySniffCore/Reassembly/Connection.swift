/// What the HTTP state of all TCP connections may hold at once: requests waiting for their
/// responses (HTTP/1.x pipelining, HTTP/2 streams), each charged an estimate of what it holds
/// (its head's bytes and 1.5 KiB for the objects around it, as measured). The per-connection cap (1,000
/// waiting) bounds one connection; this bounds them all together: 8,192 connections of 1,000
/// waiting requests each would otherwise be gigabytes. When it is exceeded, the connection table
/// ends the longest idle connections, flagged `state_budget_exceeded`, until a quarter is free.
public final class StateBudget {
    public let limit: Int
    public private(set) var used = 0
    public init(limit: Int = 32 << 20) { self.limit = limit }
    @inline(__always) func charge(_ bytes: Int) { used += bytes }
    @inline(__always) func release(_ bytes: Int) { used -= bytes }
    var exceeded: Bool { used > limit }
    /// What a waiting request is charged: its head and the objects that hold it.
    static func cost(of request: HTTPMessage?) -> Int { 1536 + max(0, request?.headersSize ?? 0) }

    /// What one connection's sessions hold of a budget now (nil budget: not counted).
    struct Account {
        let budget: StateBudget?
        private(set) var charged = 0
        /// Set by `close()`: what a session still does after the connection ended (a TLS
        /// session's records still being opened on the second core) is no longer counted.
        private var closed = false

        init(_ budget: StateBudget? = nil) { self.budget = budget }

        var isOpen: Bool { budget != nil && !closed }

        mutating func charge(_ bytes: Int) {
            guard let budget, !closed, bytes > 0 else { return }
            charged += bytes
            budget.charge(bytes)
        }

        mutating func release(_ bytes: Int) {
            guard let budget, !closed, bytes > 0 else { return }
            charged -= bytes
            budget.release(bytes)
        }

        /// The connection ended: whatever is still charged is given back, and nothing more is
        /// counted.
        mutating func close() {
            closed = true
            guard let budget, charged != 0 else { return }
            budget.release(charged)
            charged = 0
        }
    }
}

/// One TCP connection or QUIC connection: the core every transport shares (ids, endpoints, which
/// side is the client, device, times, byte counts, anomalies, set-up, what its sessions found)
/// and its transport adapter: `tcp` (reassembly, handshake, history) or QUIC's `quic`
/// (`transport` says which).
/// Side 0 is the endpoint that sent the first packet seen; `clientSide` says which side is the
/// client once that is known (from the SYN, else from the content).
public final class Connection {
    /// What this connection's sessions hold of the shared budget of waiting HTTP state (TCP
    /// connections of a pipeline; no budget elsewhere).
    var budget = StateBudget.Account()
    /// A request starts waiting for its response: charged (`StateBudget.cost`) until released.
    func chargeWaiting(_ t: Transaction) {
        guard budget.isOpen else { return }
        t.budgetCost = StateBudget.cost(of: t.request)
        budget.charge(t.budgetCost)
    }
    /// Exchanges estimated from encrypted records are kept until the connection ends
    /// (`RecordPattern`): charged like waiting requests, given back with them at the end.
    func chargeEstimates(_ bytes: Int) { budget.charge(bytes) }
    /// It is written (or dropped): what it was charged is given back.
    func releaseWaiting(_ t: Transaction) {
        budget.release(t.budgetCost)
        t.budgetCost = 0
    }
    /// The connection ended: whatever its sessions still hold of the budget is given back
    /// (a session dropped without writing its waiting requests must not leave the budget
    /// charged, or every later segment would end connections to make room that never comes).
    func releaseAllBudget() { budget.close() }
    public let id: UInt64
    public let endpoints: (Endpoint, Endpoint)
    /// Which side (0: the endpoint of the first packet seen, 1: the other) is the client, once
    /// Reassembly has decided it; `clientEvidence` says how.
    public internal(set) var clientSide: Int? = nil
    public internal(set) var clientEvidence: ClientEvidence? = nil
    /// When the connection was seen: its first packet, its last one, and when it was ended.
    public struct Times: Sendable {
        public internal(set) var first: Timestamp
        public internal(set) var last: Timestamp
        /// When it was ended (closed, reset, evicted, or at the end of the capture); nil while open.
        public internal(set) var finished: Timestamp? = nil
    }
    public internal(set) var times: Times
    /// The link-layer address of its client's device (0: none known; `DeviceTable.mac`), set
    /// when its handshake is told and when it ends.
    public internal(set) var deviceMAC: UInt64 = 0
    /// TCP's adapter: both directions' reassembly, its handshake, RST, Zeek's history letters
    /// (nil for QUIC). Readers that do not care what carries the connection use `setup`, `began`,
    /// `midstream` and the byte counts.
    public let tcp: TCPAdapter?
    public internal(set) var packets: UInt64 = 0
    public internal(set) var weirds: [Weird: Int] = [:]
    /// What the cleartext TLS handshake showed, for a connection that carried TLS.
    public internal(set) var tls: TLSInfo? = nil
    /// Set when the connection's bytes turned out not to be HTTP (another line protocol, a
    /// binary one): what each side sent first, as seen. Such a connection has no transactions.
    public internal(set) var notHTTP: NonHTTPSample? = nil
    /// Set when a proxy opened a tunnel on the connection (a CONNECT answered 2xx, a SOCKS
    /// request granted): what the client asked for. The transactions found inside it carry it.
    public internal(set) var tunnel: ProxyTunnel? = nil
    /// The capture (`-r` file) being read when the connection ended (a batch's merged rows name
    /// it, as transactions' `captureName`).
    public internal(set) var captureName = ""
    /// What carries the connection: TCP, or QUIC over UDP (then `quic` says what QUIC showed and
    /// `tls` what its TLS 1.3 handshake did; the TCP fields stay empty).
    public let transport: Transport
    /// What QUIC showed, for a QUIC connection (nil: TCP).
    public internal(set) var quic: QUICInfo? = nil
    /// QUIC: where the client sends from since its address or port changed (migration, NAT
    /// rebinding; nil: where it began). Its transactions from then on carry it.
    public internal(set) var movedClient: Endpoint? = nil
    /// What the connection's HTTP/2 session counted (nil: not HTTP/2).
    public internal(set) var http2: HTTP2Stats? = nil

    private init(id: UInt64, first: Endpoint, second: Endpoint, timestamp: Timestamp, transport: Transport, tcp: TCPAdapter?) {
        self.id = id
        self.transport = transport
        self.endpoints = (first, second)
        self.tcp = tcp
        self.times = Times(first: timestamp, last: timestamp)
    }

    /// A TCP connection whose adapter `tcp` the caller (the connection table) writes.
    convenience init(id: UInt64, first: Endpoint, second: Endpoint, timestamp: Timestamp, tcp: TCPAdapter) {
        self.init(id: id, first: first, second: second, timestamp: timestamp, transport: .tcp, tcp: tcp)
    }

    /// A connection carried by `transport` (TCP: with an adapter of its own).
    convenience init(id: UInt64, first: Endpoint, second: Endpoint, timestamp: Timestamp, transport: Transport = .tcp) {
        self.init(id: id, first: first, second: second, timestamp: timestamp, transport: transport,
                  tcp: transport == .tcp ? TCPAdapter() : nil)
    }

    @inline(__always) public func endpoint(_ side: Int) -> Endpoint { side == 0 ? endpoints.0 : endpoints.1 }

    @inline(__always) func side(of source: Endpoint) -> Int { source == endpoints.0 ? 0 : 1 }

    /// The direction of the bytes that `side` sends (the client must be decided).
    @inline(__always) func direction(ofSide side: Int) -> Direction { side == clientSide ? .fromClient : .fromServer }

    /// The endpoint that sends in `direction`.
    public func source(of direction: Direction) -> Endpoint { direction == .fromClient ? client : server }

    public var client: Endpoint { endpoint(clientSide ?? 0) }
    public var server: Endpoint { endpoint(1 - (clientSide ?? 0)) }
    /// TCP: the reassembly state of the bytes that flow in `direction` (nil for QUIC).
    @inline(__always) public func tcpHalf(_ direction: Direction) -> HalfStream? {
        tcp?.half(direction == .fromClient ? clientSide ?? 0 : 1 - (clientSide ?? 0))
    }

    /// Bytes the client sent, whatever carries them: a TCP connection's stream payload, a QUIC
    /// connection's UDP payloads (`QUICInfo.Traffic`, as its session last published it). The
    /// one place that answers it for the outputs, the report and the devices.
    /// (The adapter is asked first: reading `quic` copies the whole `QUICInfo?`.)
    public var bytesFromClient: UInt64 { tcpHalf(.fromClient)?.bytes ?? quic?.traffic.bytesFromClient ?? 0 }
    /// Bytes the server sent (as `bytesFromClient`).
    public var bytesFromServer: UInt64 { tcpHalf(.fromServer)?.bytes ?? quic?.traffic.bytesFromServer ?? 0 }

    /// The capture picked up one of its byte streams after its start (a TCP direction whose
    /// first bytes came without a SYN before them). A QUIC connection is found at its first
    /// Initial or not at all.
    public var midstream: Bool { tcp?.midstream ?? false }

    /// When the connection began: a TCP connection's first SYN, else its first packet (a QUIC
    /// connection's first Initial).
    public var began: Timestamp { tcp?.syn ?? times.first }

    /// How the connection was set up, whatever carries it; `withTLS`: its TLS handshake counts
    /// (not for a CONNECT's transaction, which came before a tunnel's TLS).
    public func setup(withTLS: Bool = true) -> ConnectionSetup {
        var s = ConnectionSetup()
        if let tcp, let syn = tcp.syn, let ack = tcp.handshakeAck { s.transport = ConnectionSetup.Span(start: syn, end: ack) }
        if withTLS, let tls, let start = tls.handshakeStart { s.secure = ConnectionSetup.Span(start: start, end: tls.handshakeEnd) }
        s.secureIsSetup = transport == .quic
        return s
    }

    public func note(_ weird: Weird) { weirds[weird, default: 0] += 1 }

    // MARK: Injection

    /// TCP: delivered bytes of `direction` at `offset` were contradicted by a later copy.
    func contradicted(at offset: UInt64, from direction: Direction) {
        note(.retransmissionInconsistency)
        tcp?.contradictions.contradicted(at: offset, from: direction)
    }

    /// Transactions found, after they were emitted, to hold bytes that a later copy contradicted
    /// (`Contradictions.transactions`; none over QUIC).
    public var contradictedTransactions: [UInt64] { tcp?.contradictions.transactions ?? [] }

    func forget(_ weird: Weird) { weirds[weird] = nil }

    /// Adds a history letter once (Zeek records each event kind once per direction). Upper case:
    /// the side that opened the connection (the client's, unless a reverse proxy's client
    /// accepted it: `ClientEvidence.reverse`).
    @inline(__always) func record(_ letter: Unicode.Scalar, side: Int) {
        let client = clientSide ?? 0
        tcp?.record(letter, originator: side == (clientEvidence == .reverse ? 1 - client : client))
    }

    /// The connection id as shown in outputs ("C" and a number).
    public var label: String { Self.label(id) }
    /// The label of connection `id`: the one place that spells it.
    public static func label(_ id: UInt64) -> String { "C\(id)" }
}

/// The transport of a connection, as outputs name it (`"transport"`).
public enum Transport: String, Sendable {
    case tcp, quic
}

/// How a connection was set up before its first request, whatever carries it: what the timings
/// (connect, ssl, dns) and the round-trip figures read, so that none of them assumes TCP.
public struct ConnectionSetup: Sendable {
    public struct Span: Sendable {
        public var start: Timestamp
        public var end: Timestamp?
    }
    /// The transport's own handshake, when it has one apart from TLS and the capture saw both
    /// ends of it: TCP's SYN to the client's ACK of the SYN-ACK. QUIC has none.
    public var transport: Span? = nil
    /// The TLS handshake: over TCP the ClientHello's first byte to the client's Finished; over
    /// QUIC the client's first Initial to its Finished.
    public var secure: Span? = nil
    /// QUIC: the TLS handshake is the connection's set-up itself (it begins with it).
    public var secureIsSetup = false

    /// When the set-up began (nil: the capture did not see it from its start).
    public var start: Timestamp? { transport?.start ?? (secureIsSetup ? secure?.start : nil) }

    /// The transport handshake's length as captured (negative when its packets came out of order).
    public var transportMilliseconds: Double? {
        guard let t = transport, let end = t.end else { return nil }
        return end.milliseconds(since: t.start)
    }

    /// The transport's round trip as the capture saw it (its handshake; at either end of the
    /// path, the two legs add up to one round trip); never negative.
    public var roundTripMilliseconds: Double? { transportMilliseconds.flatMap { $0 >= 0 ? $0 : nil } }
}

/// Streams of an HTTP/2 connection, as its session saw them.
public struct HTTP2Stats: Sendable, Equatable {
    public var streams = 0
    /// The most streams open at once (both messages not yet ended).
    public var peakConcurrentStreams = 0
    public var pushed = 0
    public var reset = 0
}

/// A tunnel through a proxy: the protocol that opened it and the target the client named.
public struct ProxyTunnel: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case connect = "CONNECT", socks4 = "SOCKS4", socks4a = "SOCKS4a", socks5 = "SOCKS5"
    }
    public var kind: Kind
    /// "host:port" as the client asked for it (an IPv6 address in brackets).
    public var target: String

    /// The target's host and port (nil port: none given).
    var hostAndPort: (host: String, port: UInt16?) {
        if target.hasPrefix("["), let close = target.firstIndex(of: "]") {
            let host = String(target[...close])
            let rest = target[target.index(after: close)...]
            return (host, rest.hasPrefix(":") ? UInt16(rest.dropFirst()) : nil)
        }
        guard let colon = target.lastIndex(of: ":") else { return (target, nil) }
        return (String(target[..<colon]), UInt16(target[target.index(after: colon)...]))
    }

    /// "SOCKS5 tunnel to web.example:8080".
    public var description: String { "\(kind.rawValue) tunnel to \(target)" }
}

/// What a connection that is not HTTP showed: why it was judged so, and the first line (up to 80
/// printable characters; other bytes as `.`) each side sent.
public struct NonHTTPSample: Sendable, Equatable {
    public var reason: String
    public var client: String?
    public var server: String?

    static func firstLine(_ bytes: [UInt8]) -> String? {
        guard !bytes.isEmpty else { return nil }
        var out = ""
        for b in bytes.prefix(80) {
            if b == 0x0D || b == 0x0A { break }
            out.unicodeScalars.append(b >= 0x20 && b < 0x7F ? Unicode.Scalar(b) : ".")
        }
        return out
    }
}
