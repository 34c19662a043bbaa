/// The streams of one QUIC connection, per direction (RFC 9000 §2-3): the open ones with their
/// reassembly, and the ids of those that are over (all data handed on, or reset), whose late
/// frames are dropped. The connection session decides what stream data means (HTTP/3); this table
/// only keeps the streams, as quic-go's streams map stands apart from its connection.
///
/// A transfer sends frame after frame of one stream: the stream of the last frame is kept at
/// hand (`last`), found without two dictionary look-ups.
struct QUICStreamTable {
    final class Stream {
        var reassembler = OffsetReassembler()
        /// The stream's length, known from a frame with FIN.
        var finalSize: UInt64? = nil
    }

    private var open = PerDirection<[UInt64: Stream]>([:])
    private var closed = PerDirection<Set<UInt64>>([])
    private var last: (direction: Direction, id: UInt64, stream: Stream)? = nil

    /// Stream `id` of `direction`, made when it is new; nil once it is over.
    @inline(__always)
    mutating func stream(_ id: UInt64, from direction: Direction) -> Stream? {
        if let last, last.id == id, last.direction == direction { return last.stream }
        guard !closed[direction].contains(id) else { return nil }
        let s: Stream
        if let existing = open[direction][id] { s = existing } else {
            s = Stream()
            open[direction][id] = s
        }
        last = (direction, id, s)
        return s
    }

    /// Stream `id` of `direction` is over: its later frames are dropped. False when it was
    /// over already.
    @discardableResult
    mutating func close(_ id: UInt64, from direction: Direction) -> Bool {
        guard !closed[direction].contains(id) else { return false }
        if let last, last.id == id, last.direction == direction { self.last = nil }
        open[direction][id] = nil
        closed[direction].insert(id)
        return true
    }

    /// The open streams of `direction` by id, taken out of the table (the connection's end).
    mutating func takeOpen(from direction: Direction) -> [(id: UInt64, stream: Stream)] {
        let list = open[direction].sorted { $0.key < $1.key }.map { (id: $0.key, stream: $0.value) }
        open[direction] = [:]
        if last?.direction == direction { last = nil }
        return list
    }
}
