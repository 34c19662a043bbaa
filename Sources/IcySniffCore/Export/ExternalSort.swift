#if canImport(Glibc)
import Glibc
#endif

/// Fixed-size records sorted at the end with memory bounded in their number: the indexes of the
/// outputs that must be reordered (HAR entries by start, connections by id). Up to
/// `memoryLimit` bytes of records are kept in memory; past it the records held are sorted and
/// written to an unlinked temporary file as one sorted run, and the end merges the runs. A capture
/// whose index fits (about 130,000 HAR entries) never touches the file and costs one sort.
///
/// Records are copied as raw bytes to the file and back: `Element` must be `BitwiseCopyable`
/// (plain numbers, no references), which the compiler checks.
///
/// Failures never lose a record silently: when the file cannot be made or written, the records
/// stay in memory from then on; a run that cannot be read back ends early and `readFailure`
/// says why (the caller counts what it wrote against `count`).
final class ExternalSort<Element: BitwiseCopyable> {
    private let areInIncreasingOrder: (Element, Element) -> Bool
    private var held: [Element] = []
    private var file: UnsafeMutablePointer<FILE>? = nil
    /// The sorted runs in the file: first element's byte offset, and how many.
    private var runs: [(offset: Int, count: Int)] = []
    private var fileSize = 0
    private let limit: Int
    private(set) var count = 0
    private(set) var spillFailed = false
    private(set) var readFailure: String? = nil

    /// `file`: where to write runs (tests); by default an unlinked file made by `tmpfile()`.
    init(memoryLimit: Int = 4 << 20, file: UnsafeMutablePointer<FILE>? = nil, by areInIncreasingOrder: @escaping (Element, Element) -> Bool) {
        self.areInIncreasingOrder = areInIncreasingOrder
        self.file = file
        limit = max(16, memoryLimit / MemoryLayout<Element>.stride)
    }

    deinit { if let file { fclose(file) } }

    /// Runs written to the temporary file so far.
    var runCount: Int { runs.count }

    func append(_ element: Element) {
        if held.count >= limit && !spillFailed { writeRun() }
        if held.capacity < limit && !spillFailed { held.reserveCapacity(limit) }
        held.append(element)
        count += 1
    }

    private func writeRun() {
        if file == nil { file = tmpfile() }
        guard let file else { spillFailed = true; return }
        held.sort(by: areInIncreasingOrder)
        let bytes = held.count * MemoryLayout<Element>.stride
        let written = held.withUnsafeBytes { fwrite($0.baseAddress, 1, bytes, file) }
        // Flushed now, so a full disk shows here and not when the runs are read back.
        guard written == bytes, fflush(file) == 0 else { spillFailed = true; return }
        runs.append((fileSize, held.count))
        fileSize += bytes
        held.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with every record in order (again on each call: a HAR may be written twice).
    /// Answers how many were given (fewer than `count` when a run could not be read back:
    /// `readFailure` says why).
    @discardableResult
    func inOrder(_ body: (Element) -> Void) -> Int {
        held.sort(by: areInIncreasingOrder)
        guard let file, !runs.isEmpty else {
            for e in held { body(e) }
            return held.count
        }
        // One cursor per run (and one over what is held), merged by always taking the least head.
        // Each run is read in slices that together stay within the memory limit.
        let size = MemoryLayout<Element>.stride
        let slice = max(4096 / size, limit / (runs.count + 1), 1)
        var cursors = runs.map { RunCursor(offset: $0.offset, remaining: $0.count) }
        var heads: [Int] = []   // cursor indexes with a head, as a binary heap on their head
        var buffers = [[Element]](repeating: [], count: cursors.count)
        var positions = [Int](repeating: 0, count: cursors.count)
        func refill(_ i: Int) -> Bool {
            let n = min(slice, cursors[i].remaining)
            guard n > 0 else { return false }
            var got = 0
            let elements = [Element](unsafeUninitializedCapacity: n) { buffer, initialized in
                let read = pread(fileno(file), UnsafeMutableRawPointer(buffer.baseAddress!), n * size, off_t(cursors[i].offset))
                got = read < 0 ? -1 : read / size
                initialized = max(got, 0)
            }
            guard got == n else {
                if readFailure == nil { readFailure = got < 0 ? String(cString: strerror(errno)) : "the file is shorter than what was written to it" }
                cursors[i].remaining = 0
                return false
            }
            cursors[i].offset += n * size
            cursors[i].remaining -= n
            buffers[i] = elements
            positions[i] = 0
            return true
        }
        let heldCursor = cursors.count
        buffers.append(held); positions.append(0)
        func head(_ i: Int) -> Element { buffers[i][positions[i]] }
        func less(_ a: Int, _ b: Int) -> Bool { areInIncreasingOrder(head(a), head(b)) }
        func siftDown(_ start: Int) {
            var i = start
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < heads.count && less(heads[l], heads[m]) { m = l }
                if r < heads.count && less(heads[r], heads[m]) { m = r }
                if m == i { return }
                heads.swapAt(i, m); i = m
            }
        }
        for i in 0..<cursors.count where refill(i) { heads.append(i) }
        if !held.isEmpty { heads.append(heldCursor) }
        for i in stride(from: heads.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
        var given = 0
        while let top = heads.first {
            body(head(top))
            given += 1
            positions[top] += 1
            if positions[top] == buffers[top].count && (top == heldCursor || !refill(top)) {
                heads.swapAt(0, heads.count - 1)
                heads.removeLast()
            }
            if !heads.isEmpty { siftDown(0) }
        }
        return given
    }

    private struct RunCursor { var offset: Int; var remaining: Int }
}
