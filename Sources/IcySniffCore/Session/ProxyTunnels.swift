/// Proxy tunnels: what a connection carries after an HTTP `CONNECT` answered 2xx (RFC 9110
/// §9.3.6) or a SOCKS handshake (SOCKS4 and its 4a extension; SOCKS5, RFC 1928, with RFC 1929's
/// user/password step) is chosen by its content, as a connection's own bytes are: TLS (with the
/// key log, its transactions), HTTP/1.x, HTTP/2 in clear; anything else stays opaque. The
/// connection's `tunnel` names the target the client asked for; the transactions found inside
/// carry it, flagged `tunnelled`.

/// The inner side of a tunnel: a session slot of its own, fed the tunnel's bytes with offsets
/// counted from the tunnel's start.
final class TunnelRelay: CarriedStreamConsumer {
    private unowned let connection: Connection
    private let slot: SessionSlot
    private var offsets = PerDirection<UInt64>(0)

    init(connection: Connection, factory: StandardSessionFactory, emitter: TransactionEmitter) {
        self.connection = connection
        self.slot = SessionSlot(factory: factory, emitter: emitter)
    }

    func received(_ bytes: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction) {
        guard !bytes.isEmpty else { return }
        slot.received(StreamChunk(offset: offsets[direction], bytes: bytes, timestamp: ts), from: direction, on: connection)
        offsets[direction] &+= UInt64(bytes.count)
    }

    func missed(_ length: UInt64, at ts: Timestamp, from direction: Direction) {
        guard length > 0 else { return }
        slot.missed(StreamGap(offset: offsets[direction], length: length, timestamp: ts), from: direction, on: connection)
        offsets[direction] &+= length
    }

    func ended(_ direction: Direction, reason: CloseReason, at ts: Timestamp) {
        slot.ended(direction, reason: reason, at: ts, on: connection)
    }

    func finished(at ts: Timestamp) {
        slot.finished(connection, at: ts)
    }
}

/// One SOCKS handshake message as read from the front of a direction's bytes.
enum SOCKSMessage: Equatable {
    /// More bytes are needed to read it.
    case incomplete
    /// Not what the protocol allows here.
    case invalid
    /// Read, `length` bytes long.
    case message(length: Int, Content)

    enum Content: Equatable {
        /// SOCKS5 method selection (client) and the server's choice.
        case methods
        case methodChosen(UInt8)
        /// RFC 1929: the client's user and password (never kept) and the server's status.
        case userPassword
        case authStatus(UInt8)
        /// The client's request: command and target; the server's reply code.
        case request(command: UInt8, target: String, kind: ProxyTunnel.Kind)
        case reply(code: UInt8, granted: Bool)
    }
}

/// Reads SOCKS handshake messages (no state beyond the bytes given).
enum SOCKSHandshake {
    /// Whether a connection's first client bytes are a SOCKS greeting: SOCKS5 method selection
    /// (version 5, 1–255 methods from the registry's ranges, and nothing else or the next
    /// message after it), or a SOCKS4 CONNECT/BIND request with its user-id terminator.
    static func isGreeting(_ b: UnsafeRawBufferPointer) -> Bool {
        guard b.count >= 3 else { return false }
        if b[0] == 5 {
            let n = Int(b[1])
            guard n >= 1, b.count >= 2 + n else { return false }
            for m in b[2..<(2 + n)] where !(m <= 9 || (m >= 0x80 && m <= 0xFE)) { return false }
            return b.count == 2 + n || b[2 + n] == 5 || b[2 + n] == 1
        }
        if b[0] == 4, b.count >= 9, b[1] == 1 || b[1] == 2 {
            return b[8...].prefix(256).contains(0)
        }
        return false
    }

    /// Whether a connection's first client bytes are too few to tell whether they are a SOCKS
    /// greeting (a greeting cut by the segmenting).
    static func mayBeGreetingPrefix(_ b: UnsafeRawBufferPointer) -> Bool {
        guard let first = b.first, first == 4 || first == 5, !isGreeting(b) else { return false }
        if b.count < 2 { return true }
        if first == 5 {
            let n = Int(b[1])
            guard n >= 1, b.count < 2 + n else { return false }
            return b[2...].allSatisfy { $0 <= 9 || ($0 >= 0x80 && $0 <= 0xFE) }
        }
        guard b[1] == 1 || b[1] == 2 else { return false }
        return b.count < 9 || (b.count < 8 + 256 && !b[8...].contains(0))
    }

    /// SOCKS4's request: VN(4) CD DSTPORT DSTIP USERID NUL, and SOCKS4a's host name after it.
    static func request4(_ b: [UInt8]) -> SOCKSMessage {
        guard let first = b.first else { return .incomplete }
        guard first == 4 else { return .invalid }
        guard b.count >= 9 else { return .incomplete }
        let port = UInt16(b[2]) << 8 | UInt16(b[3])
        guard let userEnd = b[8...].prefix(256).firstIndex(of: 0) else { return b.count - 8 >= 256 ? .invalid : .incomplete }
        // SOCKS4a: the address 0.0.0.x (x ≠ 0) says a host name follows the user id.
        if b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] != 0 {
            guard let hostEnd = b[(userEnd + 1)...].prefix(256).firstIndex(of: 0) else {
                return b.count - userEnd - 1 >= 256 ? .invalid : .incomplete
            }
            let host = String(decoding: b[(userEnd + 1)..<hostEnd], as: UTF8.self)
            return .message(length: hostEnd + 1, .request(command: b[1], target: "\(host):\(port)", kind: .socks4a))
        }
        return .message(length: userEnd + 1, .request(command: b[1], target: "\(b[4]).\(b[5]).\(b[6]).\(b[7]):\(port)", kind: .socks4))
    }

    /// SOCKS5 method selection: VER(5) NMETHODS METHODS.
    static func methods5(_ b: [UInt8]) -> SOCKSMessage {
        guard let first = b.first else { return .incomplete }
        guard first == 5 else { return .invalid }
        guard b.count >= 2, b.count >= 2 + Int(b[1]) else { return .incomplete }
        return .message(length: 2 + Int(b[1]), .methods)
    }

    /// RFC 1929's sub-negotiation: VER(1) ULEN UNAME PLEN PASSWD (read past, never kept).
    static func userPassword(_ b: [UInt8]) -> SOCKSMessage {
        guard let first = b.first else { return .incomplete }
        guard first == 1 else { return .invalid }
        guard b.count >= 2 else { return .incomplete }
        let ulen = Int(b[1])
        guard b.count >= 3 + ulen else { return .incomplete }
        let plen = Int(b[2 + ulen])
        return b.count >= 3 + ulen + plen ? .message(length: 3 + ulen + plen, .userPassword) : .incomplete
    }

    /// A SOCKS5 request (client) or reply (server): VER CMD/REP RSV ATYP ADDR PORT.
    static func request5(_ b: [UInt8], fromServer: Bool) -> SOCKSMessage {
        guard b.count >= 5 else { return b.isEmpty || b[0] == 5 ? .incomplete : .invalid }
        guard b[0] == 5, b[2] == 0 else { return .invalid }
        let addressLength: Int
        switch b[3] {
        case 1: addressLength = 4
        case 3: addressLength = 1 + Int(b[4])
        case 4: addressLength = 16
        default: return .invalid
        }
        let length = 4 + addressLength + 2
        guard b.count >= length else { return .incomplete }
        if fromServer { return .message(length: length, .reply(code: b[1], granted: b[1] == 0)) }
        let address = b[4..<(4 + addressLength)]
        let host: String
        switch b[3] {
        case 1: host = address.map(String.init).joined(separator: ".")
        case 3: host = String(decoding: address.dropFirst(), as: UTF8.self)
        default:
            var high: UInt64 = 0, low: UInt64 = 0
            for (i, byte) in address.enumerated() {
                if i < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
            }
            host = "[\(IPAddress(high: high, low: low).description)]"
        }
        let port = UInt16(b[length - 2]) << 8 | UInt16(b[length - 1])
        return .message(length: length, .request(command: b[1], target: "\(host):\(port)", kind: .socks5))
    }

    /// SOCKS4's reply: VN(0) CD DSTPORT DSTIP; 90 is "request granted".
    static func reply4(_ b: [UInt8]) -> SOCKSMessage {
        guard b.count >= 8 else { return b.isEmpty || b[0] == 0 ? .incomplete : .invalid }
        guard b[0] == 0, (90...93).contains(b[1]) else { return .invalid }
        return .message(length: 8, .reply(code: b[1], granted: b[1] == 90))
    }

    /// The SOCKS5 server's method choice: VER(5) METHOD.
    static func methodChoice(_ b: [UInt8]) -> SOCKSMessage { twoBytes(b, version: 5, SOCKSMessage.Content.methodChosen) }

    /// RFC 1929's status: VER(1) STATUS.
    static func authStatus(_ b: [UInt8]) -> SOCKSMessage { twoBytes(b, version: 1, SOCKSMessage.Content.authStatus) }

    /// A two-byte server message whose first byte is `version`, its second byte the content.
    private static func twoBytes(_ b: [UInt8], version: UInt8, _ content: (UInt8) -> SOCKSMessage.Content) -> SOCKSMessage {
        guard b.count >= 2 else { return b.isEmpty || b[0] == version ? .incomplete : .invalid }
        return b[0] == version ? .message(length: 2, content(b[1])) : .invalid
    }
}

/// The session of a connection that starts with a SOCKS greeting: it reads the handshake of
/// both directions, and when the proxy grants a CONNECT, hands the rest of the connection to a
/// `TunnelRelay`. A refused request, or a handshake that stops making sense, leaves the
/// connection listed with what was seen (`--connections`), without transactions.
final class SOCKSSession: ConnectionSession {
    let scheme = "http"
    private unowned let connection: Connection
    private unowned let emitter: TransactionEmitter
    private let tunnels: StandardSessionFactory?
    private let version: UInt8

    private enum Stage { case handshake, tunnel, over }
    private var stage = Stage.handshake
    /// Each direction's handshake bytes not yet read, and how far its dialogue has come (SOCKS5:
    /// 0 before the first message, 1 after the methods/choice, 2 after the sub-negotiation).
    private var pending = PerDirection<[UInt8]>([])
    private var clientStep = 0
    private var serverStep = 0
    /// The client's request, once read.
    private var request: (command: UInt8, target: String, kind: ProxyTunnel.Kind)? = nil
    /// Client bytes after its request, before the proxy's reply: held (bounded) for the tunnel.
    private var early: [(bytes: [UInt8], time: Timestamp)] = []
    private var earlyBytes = 0
    private static let maxEarlyBytes = 1 << 18
    private var relay: TunnelRelay? = nil

    init(connection: Connection, emitter: TransactionEmitter, version: UInt8, tunnels: StandardSessionFactory?) {
        self.connection = connection
        self.emitter = emitter
        self.version = version
        self.tunnels = tunnels
    }

    func received(_ chunk: StreamChunk, from direction: Direction, on connection: Connection) {
        switch stage {
        case .tunnel: relay?.received(chunk.bytes, at: chunk.timestamp, from: direction)
        case .over: return
        case .handshake:
            if direction == .fromClient && request != nil {
                hold(Array(chunk.bytes), at: chunk.timestamp)
                return
            }
            pending[direction].append(contentsOf: chunk.bytes)
            read(direction, at: chunk.timestamp)
        }
    }

    func missed(_ gap: StreamGap, from direction: Direction, on connection: Connection) {
        switch stage {
        case .tunnel: relay?.missed(gap.length, at: gap.timestamp, from: direction)
        case .over: return
        case .handshake: give(up: "the SOCKS handshake was not captured whole")
        }
    }

    func ended(_ direction: Direction, reason: CloseReason, at timestamp: Timestamp, on connection: Connection) {
        if stage == .tunnel { relay?.ended(direction, reason: reason, at: timestamp) }
    }

    func finished(_ connection: Connection, at timestamp: Timestamp) {
        if stage == .handshake {
            give(up: request.map { "\($0.kind.rawValue) request for \($0.target) never answered" } ?? "the SOCKS handshake never completed")
        }
        relay?.finished(at: timestamp)
    }

    private func hold(_ bytes: [UInt8], at ts: Timestamp) {
        guard !bytes.isEmpty else { return }
        earlyBytes += bytes.count
        if earlyBytes > Self.maxEarlyBytes { return give(up: "the client sent more than 256 KiB before the SOCKS proxy answered") }
        early.append((bytes, ts))
    }

    /// The message a direction's bytes should start with at this point of the dialogue. SOCKS5:
    /// the client's method selection, then (when the server chose user/password) RFC 1929's
    /// sub-negotiation, then its request; the server's choice, then the sub-negotiation's
    /// status, then its reply. The sub-negotiation is told from the request by its version byte
    /// (1, not 5).
    private func nextMessage(_ bytes: [UInt8], from direction: Direction) -> SOCKSMessage {
        switch (direction, version) {
        case (.fromClient, 4): return SOCKSHandshake.request4(bytes)
        case (.fromServer, 4): return SOCKSHandshake.reply4(bytes)
        case (.fromClient, _):
            if clientStep == 0 { return SOCKSHandshake.methods5(bytes) }
            return clientStep == 1 && bytes.first == 1 ? SOCKSHandshake.userPassword(bytes) : SOCKSHandshake.request5(bytes, fromServer: false)
        case (.fromServer, _):
            if serverStep == 0 { return SOCKSHandshake.methodChoice(bytes) }
            return serverStep == 1 && bytes.first == 1 ? SOCKSHandshake.authStatus(bytes) : SOCKSHandshake.request5(bytes, fromServer: true)
        }
    }

    /// Reads what the direction's bytes hold, message by message.
    private func read(_ direction: Direction, at ts: Timestamp) {
        while stage == .handshake {
            let bytes = pending[direction]
            let message = nextMessage(bytes, from: direction)
            switch message {
            case .incomplete:
                if bytes.count > 1024 { give(up: "not a SOCKS handshake after all") }
                return
            case .invalid:
                return give(up: "not a SOCKS handshake after all")
            case .message(let length, let content):
                pending[direction].removeFirst(length)
                accept(content, from: direction)
                let rest = pending[direction]
                if direction == .fromClient, request != nil {
                    pending.fromClient = []
                    hold(rest, at: ts)
                    return
                }
                if stage == .tunnel {
                    pending[direction] = []
                    rest.withUnsafeBytes { relay?.received($0, at: ts, from: direction) }
                    return
                }
            }
        }
    }

    /// What one handshake message means for the dialogue.
    private func accept(_ content: SOCKSMessage.Content, from direction: Direction) {
        switch content {
        case .methods: clientStep = 1
        case .userPassword: clientStep = 2
        case .request(let command, let target, let kind):
            request = (command, target, kind)
        case .methodChosen(let method):
            serverStep = 1
            if method == 0xFF { refuse("no acceptable authentication method") }
        case .authStatus(let status):
            serverStep = 2
            if status != 0 { refuse("user/password authentication failed") }
        case .reply(let code, let granted):
            guard let request else { return give(up: "the SOCKS proxy replied before the client asked") }
            guard granted else { return refuse("reply \(code)") }
            guard request.command == 1 else {
                return give(up: "\(request.kind.rawValue) \(request.command == 2 ? "BIND" : "UDP ASSOCIATE") to \(request.target) is not followed")
            }
            open(ProxyTunnel(kind: request.kind, target: request.target))
        }
    }

    private func open(_ tunnel: ProxyTunnel) {
        connection.tunnel = tunnel
        stage = .tunnel
        guard let tunnels else { return }
        let relay = TunnelRelay(connection: connection, factory: tunnels, emitter: emitter)
        self.relay = relay
        for (bytes, ts) in early { bytes.withUnsafeBytes { relay.received($0, at: ts, from: .fromClient) } }
        early = []
    }

    private func refuse(_ why: String) {
        let what = request.map { "\($0.kind.rawValue) request for \($0.target)" } ?? "SOCKS\(version) request"
        connection.note(.socksRefused)
        settle("\(what) refused: \(why)")
    }

    private func give(up reason: String) {
        connection.note(.notHTTP)
        settle(reason)
    }

    private func settle(_ reason: String) {
        stage = .over
        connection.notHTTP = NonHTTPSample(reason: reason, client: nil, server: nil)
        pending = PerDirection([])
        early = []
    }
}
