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

    init(memoryLimit: Int = 8 << 20) { self.memoryLimit = memoryLimit }

    deinit { if let file { fclose(file) } }

    /// Appends and returns the offset of the first byte.
    func append(_ bytes: [UInt8]) -> Int {
        let offset = fileSize + memory.count
        memory.append(contentsOf: bytes)
        if memory.count >= memoryLimit { spill() }
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

    func read(offset: Int, length: Int) -> [UInt8] {
        if offset >= fileSize {
            let start = offset - fileSize
            return Array(memory[start..<(start + length)])
        }
        guard let file else { return [] }
        fflush(file)
        var out = [UInt8](repeating: 0, count: length)
        let n = out.withUnsafeMutableBytes { pread(fileno(file), $0.baseAddress, length, off_t(offset)) }
        return n == length ? out : []
    }
}
