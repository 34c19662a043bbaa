#if canImport(Glibc)
import Glibc
#endif

/// Append-only bytes that move to an unlinked temporary file once they pass `memoryLimit`, so
/// large outputs that must be reordered (HAR) do not grow the process.
///
/// Failures never lose a record silently: when the file cannot be created or written, the store
/// keeps everything in memory from then on (the file's tail past what was written whole is never
/// read); when a record cannot be read back, `withBytes` answers false and `readFailure` says why.
final class SpillStore {
    private var memory: [UInt8] = []
    private var file: UnsafeMutablePointer<FILE>? = nil
    private var fileSize = 0
    let memoryLimit: Int
    /// Spilling failed once (no temporary file, disk full): records stay in memory.
    private(set) var spillFailed = false
    /// Why a spilled record could not be read back (the first failure).
    private(set) var readFailure: String? = nil

    /// `file`: where to spill (tests); by default an unlinked file made by `tmpfile()` when first needed.
    init(memoryLimit: Int = 2 << 20, file: UnsafeMutablePointer<FILE>? = nil) {
        self.memoryLimit = memoryLimit
        self.file = file
    }

    deinit { if let file { fclose(file) } }

    /// Bytes appended so far.
    var size: Int { fileSize + memory.count }

    /// Appends and returns the offset of the first byte.
    func append(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        // Spill before the buffer would grow past its limit (growing would double its capacity).
        if memory.count + bytes.count > memoryLimit && !memory.isEmpty && !spillFailed { spill() }
        // A record larger than the limit (an entry with a large body) goes to the file directly,
        // not through a copy in memory.
        if bytes.count > memoryLimit && memory.isEmpty && !spillFailed {
            if file == nil { file = tmpfile() }
            if let file, fwrite(bytes.baseAddress, 1, bytes.count, file) == bytes.count, fflush(file) == 0 {
                let offset = fileSize
                fileSize += bytes.count
                return offset
            }
            // The file could not take it: from here on everything stays in memory, as for any
            // other failure (the file's tail past what was written whole is never read).
            spillFailed = true
        }
        if memory.capacity < memoryLimit { memory.reserveCapacity(memoryLimit) }
        let offset = fileSize + memory.count
        memory.append(contentsOf: bytes)
        return offset
    }

    private func spill() {
        if file == nil { file = tmpfile() }
        guard let file else { spillFailed = true; return }   // no temporary directory: keep it in memory
        let written = memory.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        // Flushed now, so a full disk shows here and not when the records are read back.
        if written == memory.count && fflush(file) == 0 {
            fileSize += memory.count
            memory.removeAll(keepingCapacity: true)
        } else {
            spillFailed = true
        }
    }

    /// Bytes of the file read ahead by `withBytes`: entries are mostly read back in the order
    /// they were written, so one large read serves many of them.
    private var window: [UInt8] = []
    private var windowOffset = 0
    private var windowCount = 0
    private static let windowSize = 1 << 20

    /// Calls `body` with the bytes at `offset`, in slices of at most the read-back window (a
    /// record of 21 MiB is not read into one buffer), and answers true; false when a slice cannot
    /// be read back (`readFailure` says why; the slices before it were given).
    @discardableResult
    func withSlices(offset: Int, length: Int, _ body: (UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        var at = offset
        let end = offset + length
        repeat {
            // Slices end at the file's end, then come from memory.
            let n = min(end - at, at < fileSize ? min(Self.windowSize, fileSize - at) : end - at)
            guard withBytes(offset: at, length: n, body) else { return false }
            at += n
        } while at < end
        return true
    }

    /// Calls `body` with the bytes at `offset` and answers true; false (body not called) when
    /// they cannot be read back (`readFailure` says why).
    @discardableResult
    func withBytes(offset: Int, length: Int, _ body: (UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        if offset >= fileSize {
            let start = offset - fileSize
            memory.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[start..<(start + length)])) }
            return true
        }
        guard let file else { return false }
        if offset < windowOffset || offset + length > windowOffset + windowCount {
            let size = max(Self.windowSize, length)
            if window.count < size { window = [UInt8](repeating: 0, count: size) }
            let n = window.withUnsafeMutableBytes { pread(fileno(file), $0.baseAddress, min(size, fileSize - offset), off_t(offset)) }
            let reason = n < 0 ? String(cString: strerror(errno)) : "the file is shorter than what was written to it"
            windowOffset = offset
            windowCount = max(n, 0)
            guard n >= length else {
                if readFailure == nil { readFailure = reason }
                return false
            }
        }
        let start = offset - windowOffset
        window.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[start..<(start + length)])) }
        return true
    }
}
