/// HTTP/3's requests in a QUIC connection's packets, without keys: what the sizes, directions and
/// times of its 1-RTT (and 0-RTT) packets say (a client writes a request in a packet of its own,
/// Gahtan et al., arXiv 2410.06140), read into a `RequestSeries`.
///
/// A packet is measured by its *frame bytes*: what follows the header's connection ID, less the
/// AEAD tag (the packet number and the frames). A client packet of fewer than `ackOnly` frame
/// bytes carries acknowledgements or flow control alone (an ACK frame takes 5-13); a larger one
/// a request's HEADERS, except a request body: a run of full packets (`full` and more) is one
/// request with its body (or the body of the request before, while no response came), and the
/// shorter packet that ends it is the body's last. A server packet
/// of `ackOnly` frame bytes and more is response data. Several requests in one packet count once.
/// Two of the client's packets look like small requests and are not: its control streams' set-up
/// (SETTINGS, QPACK's streams) when a browser sends it apart, before its first request (fewer than
/// `setUpBytes`), and its closing (CONNECTION_CLOSE, GOAWAY) at the end, answered by no data.
struct QUICPacketPattern {
    static let ackOnly = 18
    static let full = 1000
    /// Estimated requests of a tracker's connections kept at once (`PacketWorkspace.estimates`):
    /// `RecordPattern.bytesPerExchange` each, 19 MiB.
    static let maxKept = 200_000
    /// Per packet, what is not a request's or a response's bytes: the packet number (2, usually)
    /// and a STREAM frame's header (type, stream, offset, length: about 6).
    static let framing = 8
    /// The client's first packet of frames, this small, opens its control streams (Chrome: 44
    /// frame bytes); a first request is larger (Chrome's 441; aioquic's, with its SETTINGS, 54-63).
    static let setUpBytes = 50
    /// An unanswered last packet this small is the connection's closing.
    static let closingBytes = 32

    /// HEADERS and DATA frames' type and length: 2-4 bytes each.
    var series = RequestSeries(responseFraming: 6)
    private var inBody = false
    private var sawClientFrames = false

    /// The client moved: each direction's next full packet validates the new path (a datagram
    /// padded to 1,200 bytes, RFC 9000 §8.2.1), no request or response.
    var pathProbes = PerDirection(false)
    /// The run's room for estimates ran out while this connection had requests to estimate.
    private var limited = false
    /// Where the packet being read stands in its datagram: behind a long-header packet, behind
    /// an Initial.
    private var afterLongHeader = false
    private var afterInitial = false

    mutating func datagramStarts() {
        afterLongHeader = false
        afterInitial = false
    }

    mutating func sawLongHeader() { afterLongHeader = true }
    mutating func sawInitial() { afterInitial = true }

    /// A 1-RTT packet of `frameBytes`, measured unless its datagram says it carries no request or
    /// response: not one behind an Initial (a datagram with an Initial is padded to 1,200 bytes,
    /// in its last packet; a request sent in it is missed), nor a server's behind its Handshake
    /// packets (HANDSHAKE_DONE, NEW_TOKEN, its control streams, no response yet). True as
    /// `measure`.
    @inline(__always)
    mutating func shortPacket(frameBytes: Int, at ts: Timestamp, from direction: Direction,
                              in workspace: QUICConnectionSession.PacketWorkspace) -> Bool {
        guard !afterInitial && !(afterLongHeader && direction == .fromServer) else { return false }
        return measure(frameBytes: frameBytes, at: ts, from: direction, in: workspace)
    }

    /// One packet of the connection, counted against the run's room for estimates
    /// (`PacketWorkspace.estimates`, at most `maxKept`): true for the first request this
    /// connection could not keep (the session flags it).
    mutating func measure(frameBytes: Int, at ts: Timestamp, from direction: Direction,
                          in workspace: QUICConnectionSession.PacketWorkspace) -> Bool {
        if pathProbes[direction] && frameBytes >= Self.full {
            pathProbes[direction] = false
            return false
        }
        let before = series.exchanges.count
        let room = workspace.estimates < Self.maxKept
        packet(fromClient: direction == .fromClient, frameBytes: frameBytes, at: ts, keep: room)
        if series.exchanges.count > before { workspace.estimates += 1 }
        guard !room && direction == .fromClient && frameBytes >= Self.ackOnly && !limited else { return false }
        limited = true
        return true
    }

    /// The connection is over: its estimates leave the run's room (`workspace.estimates`), and,
    /// when its packets were not decrypted and its client offered only HTTP/3 (QUIC's ALPN is
    /// encrypted), what its packets said of its requests (the closing taken back).
    mutating func finish(alpnOffered: [String]?, decrypted: Bool,
                         in workspace: QUICConnectionSession.PacketWorkspace) -> InferredTraffic? {
        workspace.estimates -= series.exchanges.count
        defer { self = QUICPacketPattern() }
        guard !decrypted, let offered = alpnOffered, !offered.isEmpty, offered.allSatisfy({ $0 == "h3" || $0.hasPrefix("h3-") }) else {
            return nil
        }
        series.dropUnansweredLast(under: Self.closingBytes - Self.framing)
        return InferredTraffic(protocolName: "h3", protocolInferred: true, exchanges: series.result(),
                               exchangeCount: series.count, exact: false)
    }

    /// `keep`: the run's kept estimates have room for another request (else it is counted only).
    mutating func packet(fromClient: Bool, frameBytes: Int, at ts: Timestamp, keep: Bool) {
        guard frameBytes >= Self.ackOnly else { return }
        let bytes = frameBytes - Self.framing
        guard fromClient else { return series.response(first: ts, last: ts, bytes: bytes) }
        defer { sawClientFrames = true }
        if !sawClientFrames && frameBytes < Self.setUpBytes { return }
        if frameBytes >= Self.full {
            // A body goes on (or is sent again) until the server answers.
            if inBody || series.awaitingResponse { inBody = true; return series.requestContinued(last: ts, bytes: bytes) }
            inBody = true
        } else if inBody {
            inBody = false
            return series.requestContinued(last: ts, bytes: bytes)
        }
        series.request(first: ts, last: ts, bytes: bytes, keep: keep)
    }
}
