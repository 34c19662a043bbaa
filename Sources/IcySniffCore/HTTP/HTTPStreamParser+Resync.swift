#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finding the next message after garbage or a gap (Suricata's probe): line by line, until a
/// plausible start line.
extension HTTPStreamParser {
    /// After garbage or a gap: skip line by line until a plausible start line.
    func consumeResync(_ bytes: UnsafeRawBufferPointer, from start: Int, offset: UInt64, at ts: Timestamp) -> Int {
        var i = start
        let n = bytes.count
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
                headOffset = offset + UInt64(lineStartInChunk)
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

}
