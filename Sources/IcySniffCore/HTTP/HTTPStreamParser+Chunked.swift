#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Chunked bodies (RFC 9112 §7.1): chunk-size lines, chunk data, the last chunk and trailers.
extension HTTPStreamParser {
    func consumeChunkSizeLine(_ bytes: UnsafeRawBufferPointer, from start: Int, at ts: Timestamp) -> Int {
        let n = bytes.count
        let base = bytes.baseAddress! + start
        guard let found = memchr(base, 0x0A, n - start) else {
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<n]))
            if buffer.count > 4096 { chunkFramingError(.badChunkSize, at: ts) }
            return n
        }
        let lf = start + (UnsafeRawPointer(found) - UnsafeRawPointer(base))
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start...lf]))
        let lineLength = buffer.count
        message?.body.wireBytes += UInt64(lineLength)
        // chunk-size = 1*HEXDIG, then optional whitespace (BWS) and ;extensions, then CRLF
        // (RFC 9112 §7.1). Anything else after the digits ("5zz") is named: a front end and a
        // back end may read such a size differently. The digits are used, so what follows is
        // still found where the bytes allow.
        var size: UInt64 = 0
        var digits = 0
        var overflow = false
        var j = 0
        while j < buffer.count && (buffer[j] == 0x20 || buffer[j] == 0x09) { j += 1 }
        while j < buffer.count, let v = hexValue(buffer[j]) {
            if size > (UInt64.max >> 4) { overflow = true }
            size = size &<< 4 | UInt64(v)
            digits += 1
            j += 1
        }
        var junk = false
        if digits > 0 {
            var k = j
            while k < buffer.count && (buffer[k] == 0x20 || buffer[k] == 0x09) { k += 1 }
            if k < buffer.count {
                let c = buffer[k]
                junk = !(c == 0x3B || c == 0x0D || c == 0x0A)
            }
        }
        buffer.removeAll(keepingCapacity: true)
        if junk, !overflow {
            message?.note(.badChunkSize)
            message?.note(.smugglingSuspected)
        }
        if digits == 0 {
            if lineLength <= 2 { return lf + 1 }   // a stray empty line between chunks: tolerated
            chunkFramingError(.badChunkSize, at: ts)
            return lf + 1
        }
        if overflow {
            chunkFramingError(.chunkSizeOverflow, at: ts)
            return lf + 1
        }
        if size == 0 {
            transition(to: .trailers)
            lineStart = 0
        } else {
            transition(to: .chunkData(remaining: size))
        }
        return lf + 1
    }

    func chunkFramingError(_ weird: Weird, at ts: Timestamp) {
        message?.note(weird)
        message?.note(.smugglingSuspected)
        buffer.removeAll(keepingCapacity: true)
        endMessage(at: ts, complete: false)
        transition(to: .start)
    }

    @inline(__always) func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }

    func consumeTrailers(_ bytes: UnsafeRawBufferPointer, from start: Int, at ts: Timestamp) -> Int {
        var i = start
        let n = bytes.count
        while i < n {
            let base = bytes.baseAddress! + i
            guard let found = memchr(base, 0x0A, n - i) else {
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<n]))
                message?.body.wireBytes += UInt64(n - i)
                if buffer.count > options.maxHeaderBytes { chunkFramingError(.headerTooLarge, at: ts) }
                return n
            }
            let lf = i + (UnsafeRawPointer(found) - UnsafeRawPointer(base))
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i...lf]))
            message?.body.wireBytes += UInt64(lf + 1 - i)
            i = lf + 1
            var contentEnd = buffer.count - 1
            if contentEnd > lineStart && buffer[contentEnd - 1] == 0x0D { contentEnd -= 1 }
            if contentEnd == lineStart {
                if let m = message, lineStart > 0 {
                    buffer.removeSubrange(lineStart...)
                    parseHeaderFields(into: m, trailers: true)
                }
                buffer.removeAll(keepingCapacity: true)
                lineStart = 0
                endMessage(at: ts, complete: true)
                return i
            }
            lineStart = buffer.count
        }
        return i
    }

}
