#if canImport(Glibc)
import Glibc
#endif

/// Append-only bytes that move to an unlinked temporary file once they pass `memoryLimit`, so
/// large outputs that must be reordered (HAR) do not grow the process.
final class SpillStore {
    private var memory: [UInt8] = []
    private var file: UnsafeMutablePointer<FILE>? = nil
    private var fileSize = 0
    let memoryLimit: Int

    init(memoryLimit: Int = 4 << 20) { self.memoryLimit = memoryLimit }

    deinit { if let file { fclose(file) } }

    /// Appends and returns the offset of the first byte.
    func append(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        // Spill before the buffer would grow past its limit (growing would double its capacity).
        if memory.count + bytes.count > memoryLimit && !memory.isEmpty { spill() }
        if memory.capacity < memoryLimit { memory.reserveCapacity(memoryLimit) }
        let offset = fileSize + memory.count
        memory.append(contentsOf: bytes)
        return offset
    }

    private func spill() {
        if file == nil { file = tmpfile() }
        guard let file else { return }   // no temporary directory: keep it in memory
        let written = memory.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        if written == memory.count {
            fileSize += memory.count
            memory.removeAll(keepingCapacity: true)
        }
    }

    /// Bytes of the file read ahead by `withBytes`: entries are mostly read back in the order
    /// they were written, so one large read serves many of them.
    private var window: [UInt8] = []
    private var windowOffset = 0
    private var windowCount = 0
    private static let windowSize = 1 << 20

    /// Calls `body` with the bytes at `offset` (empty when they cannot be read back).
    func withBytes<R>(offset: Int, length: Int, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if offset >= fileSize {
            let start = offset - fileSize
            return memory.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[start..<(start + length)])) }
        }
        guard let file else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
        if offset < windowOffset || offset + length > windowOffset + windowCount {
            fflush(file)
            let size = max(Self.windowSize, length)
            if window.count < size { window = [UInt8](repeating: 0, count: size) }
            let n = window.withUnsafeMutableBytes { pread(fileno(file), $0.baseAddress, min(size, fileSize - offset), off_t(offset)) }
            windowOffset = offset
            windowCount = max(n, 0)
            guard n >= length else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
        }
        let start = offset - windowOffset
        return window.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[start..<(start + length)])) }
    }
}
