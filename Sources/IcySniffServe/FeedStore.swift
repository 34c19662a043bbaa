import IcySniffCore
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// The web view's memory of a run: every `FeedItem` the run produced, numbered in order (`seq`,
/// from 1), in a file of its own, with only a small index in memory.
///
/// Input: `append` on the thread that feeds the `FeedSink` (never blocks on a browser). Output:
/// the records the API serves, read back with `pread` on the server's threads. What the items
/// hold (rows, transactions' archives, bodies) goes to an unlinked temporary file as it comes, so the
/// server's memory does not grow with the capture: the index is 72 bytes a record, and the
/// kernel's page cache keeps the recent records at hand. A subscriber (a browser's event stream)
/// is woken once per burst of appends, not once per record. A transaction's HAR entry is made
/// from its archive when it is asked for (`entries`, the feed's), on the asking thread.
///
/// Not `SpillStore` (the HAR writer's spill, the same idea): that one is read and written by one
/// thread, reads through a shared window, and keeps in memory what the disk refuses; this one is
/// read by the server's threads while the analysis appends, and counts such records lost, so that
/// a full disk cannot grow the process.
///
/// Thread safety: one lock guards the index and the subscribers; the file is appended only under
/// it, and a record is in the index only once its bytes are written, so readers `pread` outside
/// the lock bytes that no longer change.
public final class FeedStore: FeedConsumer, @unchecked Sendable {
    struct Span {
        var offset: Int
        var length: Int
        static let none = Span(offset: 0, length: -1)
        var exists: Bool { length >= 0 }
    }
    struct Record {
        var kind: FeedItem.Kind
        var open: Bool
        var start: Int64
        var connection: UInt64
        var page: Int32
        var row: Span
        var archive: Span
        var requestBody: Span
        var responseBody: Span
    }

    private let lock = NIOLock()
    private var records: [Record] = []
    private var pageIDs: [String] = []
    private var pageNumbers: [String: Int32] = [:]
    /// The seq of each page's own record, by page number.
    private var pageRecords: [Int] = []
    /// The latest record of each connection.
    private var connectionRecords: [UInt64: Int] = [:]
    private let fd: Int32
    /// Bytes appended: those before `flushed` are in the file, the rest in `pending` (written in
    /// runs of 256 KiB, not a system call per record: a file run appends tens of thousands a
    /// second; a record is readable from `pending` the moment it is appended).
    private var size = 0
    private var flushed = 0
    private var pending: [UInt8] = []
    private static let flushBytes = 256 << 10
    /// Records that could not be written (the disk is full): counted, said once.
    public private(set) var lost = 0
    public var onWriteError: (@Sendable (String) -> Void)? = nil
    private var running = true
    /// What makes HAR entries of the transactions' archives: the feed's (`useEntries`).
    private var entries: FeedEntries? = nil

    final class Subscription {
        let wake: @Sendable () -> Void
        var scheduled = false
        init(wake: @escaping @Sendable () -> Void) { self.wake = wake }
    }
    private var subscribers: [Int: Subscription] = [:]
    private var nextSubscriber = 0

    /// `directory`: where the records' file is made (and unlinked at once); nil when it cannot be.
    public init?(directory: String = FeedStore.temporaryDirectory) {
        var template = Array((directory + "/icy-sniff-serve-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard made >= 0 else { return nil }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        fd = made
    }

    deinit { close(fd) }

    public static var temporaryDirectory: String {
        if let t = getenv("TMPDIR"), t.pointee != 0 { return String(cString: t) }
        return "/tmp"
    }

    /// The feed that appends here makes its HAR entries so (its redaction, its bodies): given
    /// before its first append.
    public func useEntries(_ entries: FeedEntries) { lock.withLock { self.entries = entries } }

    // MARK: Appending (the analysis's thread)

    public func append(_ item: FeedItem) {
        let bytes = item.row.count + item.archive.count + (item.requestBody?.count ?? 0) + (item.responseBody?.count ?? 0)
        var wake: [Subscription] = []
        lock.withLock {
            if !pending.isEmpty && pending.count + bytes > Self.flushBytes && !flushPending() {
                lost += 1
                return
            }
            // Copied once, into the buffer the file is written from (byte i of `pending` is byte
            // `flushed + i` of the file).
            func add(_ part: UnsafeBufferPointer<UInt8>?) -> (Int, Int) {
                guard let part else { return (0, -1) }
                let at = pending.count
                pending.append(contentsOf: part)
                return (flushed + at, part.count)
            }
            let row = add(item.row), archive = add(item.kind == .transaction ? item.archive : nil)
            let request = add(item.requestBody), response = add(item.responseBody)
            size = flushed + pending.count
            func span(_ s: (Int, Int)) -> Span { s.1 < 0 ? .none : Span(offset: s.0, length: s.1) }
            var page: Int32 = -1
            if let id = item.page {
                if let n = pageNumbers[id] { page = n } else {
                    page = Int32(pageIDs.count)
                    pageNumbers[id] = page
                    pageIDs.append(id)
                    pageRecords.append(0)
                }
            }
            records.append(Record(kind: item.kind, open: item.open, start: item.start.nanoseconds, connection: item.connection,
                                  page: page, row: span(row), archive: span(archive), requestBody: span(request), responseBody: span(response)))
            let seq = records.count
            switch item.kind {
            case .page: pageRecords[Int(page)] = seq
            case .connection: connectionRecords[item.connection] = seq
            case .transaction: break
            }
            for s in subscribers.values where !s.scheduled {
                s.scheduled = true
                wake.append(s)
            }
        }
        for s in wake { s.wake() }
    }

    /// Writes `pending` to the file (under the lock). False when the disk refused it: those
    /// records are then read back empty, and counted lost.
    private func flushPending() -> Bool {
        guard !pending.isEmpty else { return true }
        let ok = writeAll(pending, at: flushed)
        if !ok { lost += 1 }
        flushed = size
        pending.removeAll(keepingCapacity: true)
        return ok
    }

    private func writeAll(_ bytes: [UInt8], at offset: Int) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, $0.count - done, off_t(offset + done)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                let reason = String(cString: strerror(errno))
                if lost == 0 { onWriteError?("--serve: the page's records could not be written to \(Self.temporaryDirectory): \(reason); later rows are missing from the page") }
                return false
            }
            done += n
        }
        return true
    }

    /// The run's analysis has ended (a file read to its end, a live capture stopped).
    public func finish() {
        var wake: [Subscription] = []
        lock.withLock {
            running = false
            for s in subscribers.values where !s.scheduled {
                s.scheduled = true
                wake.append(s)
            }
        }
        for s in wake { s.wake() }
    }

    // MARK: Subscribers (a browser's event stream)

    func subscribe(wake: @escaping @Sendable () -> Void) -> Int {
        lock.withLock {
            nextSubscriber += 1
            subscribers[nextSubscriber] = Subscription(wake: wake)
            return nextSubscriber
        }
    }

    func unsubscribe(_ id: Int) { lock.withLock { _ = subscribers.removeValue(forKey: id) } }

    /// The subscriber is about to read: the next append wakes it again.
    func acknowledge(_ id: Int) { lock.withLock { subscribers[id]?.scheduled = false } }

    // MARK: Reading (the server's threads)

    public var count: Int { lock.withLock { records.count } }
    public var isRunning: Bool { lock.withLock { running } }
    var subscriberCount: Int { lock.withLock { subscribers.count } }

    private func record(_ seq: Int) -> Record? {
        lock.withLock { seq >= 1 && seq <= records.count ? records[seq - 1] : nil }
    }

    func read(_ span: Span) -> [UInt8] {
        guard span.length > 0 else { return [] }
        // Not yet in the file: from the buffer (a record is never split between the two).
        let buffered: [UInt8]? = lock.withLock {
            guard span.offset >= flushed else { return nil }
            let from = span.offset - flushed
            return Array(pending[from..<from + span.length])
        }
        if let buffered { return buffered }
        var bytes = [UInt8](repeating: 0, count: span.length)
        var done = 0
        while done < span.length {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, span.length - done, off_t(span.offset + done)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return [] }
            done += n
        }
        return bytes
    }

    /// Records `after` a seq, as a JSON array of `{"seq","kind","page","open","data"}` objects
    /// (docs/WEBVIEW.md), at most `limit` of them and about `maxBytes`.
    func records(after: Int, limit: Int, maxBytes: Int = 1 << 20) -> (json: [UInt8], last: Int, count: Int) {
        // `after` past the last record asks for what is not there yet: nothing, and `last` is
        // the last record's seq; before the first (negative), from the first.
        let (from, chosen, pages): (Int, [Record], [String]) = lock.withLock {
            let from = min(max(0, after), records.count), to = from + min(max(0, limit), records.count - from)
            return (from, from < to ? Array(records[from..<to]) : [], pageIDs)
        }
        var out: [UInt8] = [UInt8(ascii: "[")]
        var n = 0
        for (i, r) in chosen.enumerated() {
            if n > 0 && out.count >= maxBytes { break }
            if n > 0 { out.append(UInt8(ascii: ",")) }
            appendRecord(r, seq: from + i + 1, pages: pages, to: &out)
            n += 1
        }
        out.append(UInt8(ascii: "]"))
        return (out, from + n, n)
    }

    private func appendRecord(_ r: Record, seq: Int, pages: [String], to out: inout [UInt8]) {
        out += Array("{\"seq\":\(seq),\"kind\":\"\(r.kind.rawValue)\"".utf8)
        if r.page >= 0 { out += Array(",\"page\":\"\(pages[Int(r.page)])\"".utf8) }
        if r.kind == .connection { out += Array(",\"open\":\(r.open)".utf8) }
        if r.kind == .transaction {
            out += Array(",\"bodies\":[\(r.requestBody.exists ? r.requestBody.length : -1),\(r.responseBody.exists ? r.responseBody.length : -1)]".utf8)
        }
        out += Array(",\"data\":".utf8)
        let row = read(r.row)
        out += row.isEmpty ? Array("null".utf8) : row
        out.append(UInt8(ascii: "}"))
    }

    /// A transaction's HAR entry.
    func entry(_ seq: Int) -> [UInt8]? {
        guard let r = record(seq), r.kind == .transaction else { return nil }
        let (pages, entries) = lock.withLock { (pageIDs, self.entries) }
        return entry(r, pages: pages, entries: entries)
    }

    /// The HAR entry of transaction record `r`, made from its archive; nil when it cannot be
    /// (the disk lost the record).
    private func entry(_ r: Record, pages: [String], entries: FeedEntries?) -> [UInt8]? {
        guard let entries else { return nil }
        let archive = read(r.archive)
        guard !archive.isEmpty else { return nil }
        let requestBody = r.requestBody.exists ? read(r.requestBody) : nil
        let responseBody = r.responseBody.exists ? read(r.responseBody) : nil
        let page = r.page >= 0 && Int(r.page) < pages.count ? pages[Int(r.page)] : nil
        return archive.withUnsafeBytes { entries.entry(archive: $0, page: page, requestBody: requestBody, responseBody: responseBody) }
    }

    /// A transaction's kept body (nil: none kept).
    func body(_ seq: Int, response: Bool) -> [UInt8]? {
        guard let r = record(seq), r.kind == .transaction else { return nil }
        let span = response ? r.responseBody : r.requestBody
        return span.exists ? read(span) : nil
    }

    /// The latest record of a connection, as the API gives a record.
    func connection(_ id: UInt64) -> [UInt8]? {
        let found: (Record, Int)? = lock.withLock { connectionRecords[id].map { (records[$0 - 1], $0) } }
        guard let (r, seq) = found else { return nil }
        var out: [UInt8] = []
        appendRecord(r, seq: seq, pages: [], to: &out)
        return out
    }

    /// The transactions whose row or HAR entry (URL, headers, …) contains `text`, ignoring ASCII
    /// case: their seqs.
    func search(_ text: String) -> [Int] {
        let needle = text.utf8.map(lowerASCII)
        guard !needle.isEmpty else { return [] }
        let (all, pages, entries) = lock.withLock { (records, pageIDs, self.entries) }
        var found: [Int] = []
        needle.withUnsafeBufferPointer { needle in
            func holds(_ bytes: [UInt8]?) -> Bool { bytes?.withUnsafeBufferPointer { containsIgnoringCase($0, lowered: needle) } ?? false }
            // The row first: the entry is made only for the transactions it does not settle.
            for (i, r) in all.enumerated() where r.kind == .transaction {
                if holds(read(r.row)) || holds(entry(r, pages: pages, entries: entries)) { found.append(i + 1) }
            }
        }
        return found
    }

    /// The transactions whose response (`response`) or request has a header field `name`, case
    /// ignored (`GET /api/search?response-header=NAME`).
    func search(header name: String, response: Bool) -> [Int] {
        guard !name.isEmpty else { return [] }
        let (all, entries) = lock.withLock { (records, self.entries) }
        guard let entries else { return [] }
        var found: [Int] = []
        for (i, r) in all.enumerated() where r.kind == .transaction {
            let archive = read(r.archive)
            if !archive.isEmpty, archive.withUnsafeBytes({ entries.hasHeader(name, response: response, archive: $0) }) { found.append(i + 1) }
        }
        return found
    }

    /// A HAR 1.2 document of the chosen transactions (in HAR's order, by start), their pages and
    /// their connections, as the HAR output writes them.
    func har(_ seqs: [Int]) -> [UInt8] {
        let (chosen, pageSeqs, connectionSeqs, pages, entries): ([(Int, Record)], [Int], [Int], [String], FeedEntries?) = lock.withLock {
            var chosen: [(Int, Record)] = []
            var pages = Set<Int32>(), connections = Set<UInt64>()
            for s in Set(seqs) where s >= 1 && s <= records.count && records[s - 1].kind == .transaction {
                chosen.append((s, records[s - 1]))
                if records[s - 1].page >= 0 { pages.insert(records[s - 1].page) }
                connections.insert(records[s - 1].connection)
            }
            chosen.sort { ($0.1.start, $0.0) < ($1.1.start, $1.0) }
            let pageSeqs = pages.map { pageRecords[Int($0)] }.filter { $0 > 0 }
                .sorted { (records[$0 - 1].start, $0) < (records[$1 - 1].start, $1) }
            let connectionSeqs = connections.compactMap { connectionRecords[$0] }.sorted { records[$0 - 1].connection < records[$1 - 1].connection }
            return (chosen, pageSeqs, connectionSeqs, pageIDs, self.entries)
        }
        var out = Array("{\"log\":{\"version\":\"1.2\",\"creator\":{\"name\":\"icy-sniff\",\"version\":\"\(IcySniffVersion.current)\"},\"pages\":[".utf8)
        func list(_ items: some Sequence<[UInt8]>) {
            var first = true
            for bytes in items {
                if bytes.isEmpty { continue }
                if !first { out.append(UInt8(ascii: ",")) }
                out += bytes
                first = false
            }
        }
        list(pageSeqs.lazy.compactMap { self.record($0) }.map { self.read($0.row) })
        out += Array("],\"entries\":[".utf8)
        list(chosen.lazy.map { self.entry($0.1, pages: pages, entries: entries) ?? [] })
        out += Array("],\"_connections\":[".utf8)
        list(connectionSeqs.lazy.compactMap { self.record($0) }.map { self.read($0.row) })
        out += Array("]}}\n".utf8)
        return out
    }

    /// The chosen transactions' NDJSON rows, in the order they completed (as `--format ndjson`).
    func ndjson(_ seqs: [Int]) -> [UInt8] {
        var out: [UInt8] = []
        for s in Set(seqs).sorted() {
            guard let r = record(s), r.kind == .transaction else { continue }
            out += read(r.row)
            out.append(0x0A)
        }
        return out
    }
}
