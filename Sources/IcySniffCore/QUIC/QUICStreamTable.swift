/// What reads a QUIC connection's streams (HTTP/3 does; WebTransport or MASQUE would): per stream
/// and direction, its bytes in order, the holes the capture left, its end, or its reset — the
/// events TCP's `StreamHandler` gets per connection, per stream here.
protocol QUICStreamConsumer: AnyObject {
    func streamData(_ id: UInt64, _ bytes: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction)
    func streamGap(_ id: UInt64, _ length: UInt64, at ts: Timestamp, from direction: Direction)
    func streamEnded(_ id: UInt64, at ts: Timestamp, from direction: Direction)
    func streamReset(_ id: UInt64, at ts: Timestamp, from direction: Direction)
}

/// The streams of one QUIC connection, per direction (RFC 9000 §2-3): the open ones with their
/// reassembly, and the ids of those that are over (all data handed on, or reset), whose late
/// frames are dropped. STREAM and RESET_STREAM frames come in; what their data means is the
/// `Consumer`'s (HTTP/3), made by the table at the first frame that needs it: this table only
/// keeps the streams, as quic-go's streams map stands apart from its connection.
///
/// A transfer sends frame after frame of one stream: the stream of the last frame is kept at
/// hand (`last`, `lastStream`), found without two dictionary look-ups.
struct QUICStreamTable<Consumer: QUICStreamConsumer> {
    final class Stream {
        var reassembler = OffsetReassembler()
        /// The stream's length, known from a frame with FIN.
        var finalSize: UInt64? = nil
    }

    private var open = PerDirection<[UInt64: Stream]>([:])
    private var closed = PerDirection<Set<UInt64>>([])
    /// The last frame's stream, and which it is: kept apart so that the per-frame check reads
    /// two plain values (with the reference in one tuple, each check copied the tuple out and
    /// retained and released the stream).
    private var lastStream: Stream? = nil
    private var last: (direction: Direction, id: UInt64)? = nil
    /// What reads the streams; nil until a frame needed it (a connection whose packets were never
    /// opened has none).
    private(set) var consumer: Consumer? = nil
    private let makeConsumer: () -> Consumer

    init(consumer make: @escaping () -> Consumer) { makeConsumer = make }

    @inline(__always)
    private mutating func reader() -> Consumer {
        if let consumer { return consumer }
        let c = makeConsumer()
        consumer = c
        return c
    }

    /// Stream `id` of `direction`, made when it is new; nil once it is over.
    @inline(__always)
    mutating func stream(_ id: UInt64, from direction: Direction) -> Stream? {
        if let last, last.id == id, last.direction == direction { return lastStream }
        guard !closed[direction].contains(id) else { return nil }
        let s: Stream
        if let existing = open[direction][id] { s = existing } else {
            s = Stream()
            open[direction][id] = s
        }
        last = (direction, id)
        lastStream = s
        return s
    }

    /// Stream `id` of `direction` is over: its later frames are dropped. False when it was
    /// over already.
    @discardableResult
    mutating func close(_ id: UInt64, from direction: Direction) -> Bool {
        guard !closed[direction].contains(id) else { return false }
        if let last, last.id == id, last.direction == direction { self.last = nil; lastStream = nil }
        open[direction][id] = nil
        closed[direction].insert(id)
        return true
    }

    /// The open streams of `direction` by id, taken out of the table (the connection's end).
    private mutating func takeOpen(from direction: Direction) -> [(id: UInt64, stream: Stream)] {
        let list = open[direction].sorted { $0.key < $1.key }.map { (id: $0.key, stream: $0.value) }
        open[direction] = [:]
        if last?.direction == direction { last = nil; lastStream = nil }
        return list
    }

    /// A STREAM frame's data: handed on in order, with the holes a later frame skips past;
    /// the stream ends once everything up to its FIN was handed on.
    ///
    /// The consumer and the stream are named unretained (bound as strong references, a retain
    /// and a release each a frame): the table holds both (the consumer once made, the stream
    /// until `close`), and nothing else can change the table while this mutating call has it
    /// (exclusive access, which debug builds check), so neither goes before `close` here.
    @inline(__always)
    mutating func data(_ id: UInt64, _ data: UnsafeRawBufferPointer, at offset: UInt64, fin: Bool, at ts: Timestamp,
                       from direction: Direction) {
        let consumer = Unmanaged.passUnretained(reader())
        guard let stream = stream(id, from: direction).map(Unmanaged.passUnretained) else { return }
        let complete = stream._withUnsafeGuaranteedRef { s in
            if fin { s.finalSize = offset + UInt64(data.count) }
            consumer._withUnsafeGuaranteedRef { c in
                s.reassembler.insert(data, at: offset, deliver: { c.streamData(id, $0, at: ts, from: direction) },
                                     lost: { c.streamGap(id, $0, at: ts, from: direction) })
            }
            guard let size = s.finalSize else { return false }
            return s.reassembler.delivered >= size
        }
        if complete {
            close(id, from: direction)
            consumer._withUnsafeGuaranteedRef { $0.streamEnded(id, at: ts, from: direction) }
        }
    }

    /// A RESET_STREAM frame: the stream is over, said once (the consumer made only then).
    mutating func reset(_ id: UInt64, at ts: Timestamp, from direction: Direction) {
        guard close(id, from: direction) else { return }
        reader().streamReset(id, at: ts, from: direction)
    }

    /// The connection is over: each stream still open hands on what it holds, its holes
    /// declared lost, and ends when its length is known (a FIN came), by id, the client's first.
    mutating func flush(at ts: Timestamp) {
        guard let consumer else { return }
        for direction in [Direction.fromClient, .fromServer] {
            for (id, s) in takeOpen(from: direction) {
                s.reassembler.skipHoles(deliver: { consumer.streamData(id, $0, at: ts, from: direction) },
                                        lost: { consumer.streamGap(id, $0, at: ts, from: direction) })
                if let size = s.finalSize {
                    s.reassembler.lose(upTo: size, lost: { consumer.streamGap(id, $0, at: ts, from: direction) })
                    consumer.streamEnded(id, at: ts, from: direction)
                }
            }
        }
    }
}
