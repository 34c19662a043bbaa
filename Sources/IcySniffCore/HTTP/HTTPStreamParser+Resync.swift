#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finding the next message after garbage or a gap (Suricata's probe): line by line, until a
/// plausible start line — and at every segment boundary, since a message usually starts a
/// segment of its own: the end of a body whose head was lost has no line end before the next
/// message's start line.
extension HTTPStreamParser {
    /// After garbage or a gap: skip line by line until a plausible start line.
    func consumeResync(_ bytes: UnsafeRawBufferPointer, from start: Int, offset: UInt64, peerAck: UInt64?, at ts: Timestamp) -> Int {
        var i = start
        let n = bytes.count
        if start == 0, !buffer.isEmpty, startsMessage(bytes) {
            // The chunk starts a message: what was held of the line before it is garbage (and
            // was counted as skipped when it was held).
            buffer.removeAll(keepingCapacity: true)
        }
        while i < n {
            let base = bytes.baseAddress! + i
            guard let found = memchr(base, 0x0A, n - i) else {
                if buffer.count < 8192 {
                    buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<min(n, i + 8192)]))
                }
                skipped(role == .request ? .unexpectedClientData : .unexpectedServerData, bytes: n - i)
                return n
            }
            let lf = i + (UnsafeRawPointer(found) - UnsafeRawPointer(base))
            // The line began `heldBefore` bytes before this chunk's part of it (held from earlier chunks).
            let heldBefore = buffer.count
            let lineStartInChunk = i
            if buffer.count < 8192 { buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i...lf])) }
            i = lf + 1
            var end = buffer.count - 1
            if end > 0 && buffer[end - 1] == 0x0D { end -= 1 }
            let line = buffer[0..<end]
            let plausible = role == .request ? RequestLine.isPlausible(line) : StatusLine(line) != nil
            if plausible {
                // Restart a head with this line (its start may have been in an earlier chunk).
                let held = buffer
                buffer.removeAll(keepingCapacity: true)
                headOffset = offset + UInt64(lineStartInChunk) - UInt64(min(heldBefore, Int(offset) + lineStartInChunk))
                headPeerAck = peerAck
                headTime = ts
                lineStart = 0
                transition(to: .head)
                _ = held.withUnsafeBytes { consumeHead($0, from: 0, at: ts) }
                return i
            }
            skipped(role == .request ? .unexpectedClientData : .unexpectedServerData, bytes: buffer.count)
            buffer.removeAll(keepingCapacity: true)
        }
        return i
    }

    /// The first line of a head held from earlier chunks (no line end yet) when `bytes`, a new
    /// chunk, start a message: when what is held cannot begin one (the end of a body whose head
    /// was not seen), it is dropped as garbage and the answer is true.
    func dropsHeldGarbage(before bytes: UnsafeRawBufferPointer) -> Bool {
        guard !mayBeginStartLine(buffer[...]), startsMessage(bytes) else { return false }
        skipped(role == .request ? .unexpectedClientData : .unexpectedServerData, bytes: buffer.count)
        buffer.removeAll(keepingCapacity: true)
        return true
    }

    /// Whether `held`, the beginning of a line, may still become a start line: a status line's
    /// `HTTP/`, a request line's method (upper-case letters) and what follows it.
    private func mayBeginStartLine(_ held: ArraySlice<UInt8>) -> Bool {
        if role == .response {
            let prefix = Array("http/".utf8)
            return zip(held, prefix).allSatisfy { ($0 | 0x20) == $1 }
        }
        for c in held {
            if c == 0x20 { return true }
            guard (0x41...0x5A).contains(c) || c == 0x2D || c == 0x5F else { return false }
        }
        return true
    }

    /// Whether `bytes` (a chunk) begin with a plausible start line (checked up to its line end,
    /// or as far as the chunk goes: a status line's `HTTP/1.x NNN `, a request line's method and
    /// target).
    func startsMessage(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let limit = min(bytes.count, 8192)
        var end = 0
        while end < limit && bytes[end] != 0x0A { end += 1 }
        let whole = end < limit
        if whole && end > 0 && bytes[end - 1] == 0x0D { end -= 1 }
        let line = Array(UnsafeRawBufferPointer(rebasing: bytes[0..<end]))[...]
        if role == .response { return StatusLine(line) != nil }
        return whole ? RequestLine.isPlausible(line) : HTTPMethods.known.contains(where: { method in
            line.count > method.utf8.count && line.starts(with: method.utf8) && line[method.utf8.count] == 0x20
        })
    }
}
