import IcySniffCore
#if canImport(Glibc)
import Glibc
#endif

/// A side of `diff` given as JSON, read without holding it: NDJSON a line at a time, a HAR an
/// entry at a time, each within a cap. Two 1.27 GB NDJSON files took 2.5 GiB when each was read
/// whole; what a side keeps now is its comparison's (`ComparisonSide`, with its key cap).
///
/// The input is opened once: a FIFO (`diff <(…) <(…)`) cannot be opened a second time, so its
/// first bytes, read to tell JSON from a capture, are handed on with the rest (`captureFeed`).
///
/// `@unchecked Sendable`: after `captureFeed` hands the input to its thread, that thread is the
/// only one that reads it (the caller reads the pipe's other end), so nothing is shared.
final class DiffInput: @unchecked Sendable {
    private let file: UnsafeMutablePointer<FILE>
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)
    private var position = 0, end = 0
    private(set) var failed = false

    /// A row or entry past this is not read (an icy-sniff NDJSON row is about 1 KiB; a HAR entry
    /// carries its bodies with --bodies).
    static let maxRow = 1 << 20
    static let maxEntry = 64 << 20

    init?(path: String) {
        guard let f = fopen(path, "rb") else { return nil }
        file = f
    }

    deinit { fclose(file) }

    private func refill() -> Bool {
        position = 0
        end = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
        if end == 0 && ferror(file) != 0 { failed = true }
        return end > 0
    }

    @inline(__always) private func next() -> UInt8? {
        if position == end && !refill() { return nil }
        defer { position += 1 }
        return buffer[position]
    }

    /// The first byte that is not white space, left unread.
    func peek() -> UInt8? {
        while true {
            if position == end && !refill() { return nil }
            let b = buffer[position]
            if b != 0x20 && b != 0x0A && b != 0x0D && b != 0x09 { return b }
            position += 1
        }
    }

    /// The first key of the object that starts here, read from what is buffered without
    /// consuming it: a HAR's is "log", an NDJSON row's anything else.
    func firstKey() -> String? {
        guard peek() == UInt8(ascii: "{") else { return nil }
        var i = position + 1
        while i < end, [0x20, 0x0A, 0x0D, 0x09].contains(buffer[i]) { i += 1 }
        guard i < end, buffer[i] == 0x22 else { return nil }
        var j = i + 1
        while j < end, buffer[j] != 0x22, j - i < 64 { j += 1 }
        return j < end && buffer[j] == 0x22 ? String(decoding: buffer[(i + 1)..<j], as: UTF8.self) : nil
    }

    enum Line { case line([UInt8]), tooLong, end }

    /// The next line (without its newline); `tooLong` for one past `max` bytes, skipped whole.
    func line(max: Int) -> Line {
        var out: [UInt8] = []
        var over = false
        while true {
            if position == end && !refill() { return out.isEmpty && !over ? .end : (over ? .tooLong : .line(out)) }
            let found: Int? = buffer.withUnsafeBytes { b in
                memchr(b.baseAddress! + position, 0x0A, end - position).map { UnsafeRawPointer($0) - b.baseAddress! }
            }
            let stop = found ?? end
            if !over {
                if out.count + (stop - position) > max { over = true; out = [] } else { out += buffer[position..<stop] }
            }
            position = stop
            if found != nil {
                position += 1
                return over ? .tooLong : .line(out)
            }
        }
    }

    /// Each element of the HAR's `log.entries`, as its JSON bytes, in order; an element past
    /// `maxEntry` bytes is given as nil (counted by the caller). False when `log.entries` never
    /// came (not a HAR).
    func forEachEntry(_ body: ([UInt8]?) -> Void) -> Bool {
        var depth = 0
        var inString = false, escaped = false
        var keyAt: [Int: String] = [:]        // the last key read at each object depth
        var text: [UInt8] = [], textLong = false
        var pendingKey: String? = nil        // a string just ended: a key if ':' follows
        var logDepth = -1, entriesDepth = -1
        var entry: [UInt8]? = nil, entryOver = false, entryDepth = -1
        var sawEntries = false
        while let b = next() {
            if entryDepth >= 0 {
                if !entryOver {
                    if entry!.count >= Self.maxEntry { entryOver = true; entry = [] } else { entry!.append(b) }
                }
            }
            if inString {
                if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 {
                    inString = false
                    pendingKey = textLong ? nil : String(decoding: text, as: UTF8.self)
                    continue
                }
                if !textLong { if text.count < 64 { text.append(b) } else { textLong = true } }
                continue
            }
            switch b {
            case 0x22:
                inString = true; text = []; textLong = false
            case 0x3A:                                         // ':' after a key
                if let k = pendingKey { keyAt[depth] = k }
                pendingKey = nil
            case 0x7B, 0x5B:                                   // '{' '['
                pendingKey = nil
                if depth == entriesDepth && b == 0x7B && entryDepth < 0 {
                    entry = [b]; entryOver = false; entryDepth = depth
                }
                depth += 1
                if b == 0x7B && depth == 2 && keyAt[1] == "log" { logDepth = 2 }
                if b == 0x5B && logDepth == 2 && depth == 3 && keyAt[2] == "entries" { entriesDepth = 3; sawEntries = true }
                keyAt[depth] = nil
            case 0x7D, 0x5D:                                   // '}' ']'
                pendingKey = nil
                depth -= 1
                if depth == entryDepth {
                    body(entryOver ? nil : entry)
                    entry = nil; entryDepth = -1
                }
                if b == 0x5D && depth == 2 && entriesDepth == 3 { entriesDepth = -1 }
                if depth < 0 { return sawEntries }
            default:
                if b != 0x2C && b != 0x20 && b != 0x0A && b != 0x0D && b != 0x09 { pendingKey = nil }
            }
        }
        return sawEntries
    }

    /// A path a capture reader can open for this input's bytes from where it stands: the input
    /// itself when it is a regular file (opened again), else a pipe fed by a thread with the bytes
    /// already read and the rest (a FIFO opened twice waited for a writer that had gone).
    func captureFeed(path: String) -> String {
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) != S_IFREG else { return path }
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return path }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        let pending = Array(buffer[0..<end])      // nothing was consumed past a peek
        let started = startThread(named: "icy-diff-feed") { [self] in
            let source = self.file   // the input (and its FILE) lives as long as the thread
            func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
                var done = 0
                while done < bytes.count {
                    let n = Glibc.write(writeEnd, bytes.baseAddress! + done, bytes.count - done)
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { return false }
                    done += n
                }
                return true
            }
            var ok = pending.withUnsafeBytes { write($0) }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while ok {
                let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, source) }
                if n == 0 { break }
                ok = chunk.withUnsafeBytes { write(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            }
            close(writeEnd)
        }
        guard let thread = started else {
            close(readEnd); close(writeEnd)
            return path
        }
        pthread_detach(thread)
        return "/dev/fd/\(readEnd)"
    }
}
