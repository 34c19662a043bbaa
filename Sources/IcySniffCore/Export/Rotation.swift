#if canImport(Glibc)
import Glibc
#endif

/// When an output's file ends and the next begins: tcpdump's `-G`, `-C` and `-W`, for the
/// transaction outputs and for `-w` alike.
public struct RotationPolicy: Sendable, Equatable {
    /// `-G`: one file per period of this many seconds. Periods are aligned to local midnight
    /// (`-G 3600` starts files on the hour, `-G 86400` at midnight), as Zeek aligns its logs.
    public var seconds: Int? = nil
    /// `-C`: a new file once this many bytes are in the current one (tcpdump's unit, 10^6 bytes
    /// per "MB", is the command line's).
    public var bytes: Int? = nil
    /// `-W`: keep the last N files this run wrote; older ones are removed (a ring).
    public var keep: Int? = nil

    public init() {}
    public var isEmpty: Bool { seconds == nil && bytes == nil && keep == nil }
}

/// The names and periods of a rotated output's files: the one place that decides them.
///
/// With `-G` the name is an strftime(3) pattern of the period's start, in local time
/// (`http-%Y%m%d-%H.ndjson`). A further file of the same name gets a number before its extension
/// (`http.ndjson`, `http.1.ndjson`, `http.2.ndjson`, …): that is how `-C` names the files of one
/// period, and how a name already taken is never overwritten.
public struct RotationNaming: Sendable {
    public let pattern: String
    public let policy: RotationPolicy

    public init(pattern: String, policy: RotationPolicy) {
        self.pattern = pattern
        self.policy = policy
    }

    /// The start, in seconds since the epoch, of the `-G` period that `t` falls in (nil: no `-G`).
    public func periodStart(of t: Timestamp) -> Int64? {
        guard let g = policy.seconds.map(Int64.init), g > 0 else { return nil }
        let s = t.nanoseconds >= 0 ? t.nanoseconds / 1_000_000_000 : (t.nanoseconds + 1) / 1_000_000_000 - 1
        var clock = time_t(s)
        var parts = tm()
        localtime_r(&clock, &parts)
        let local = s + Int64(parts.tm_gmtoff)
        let into = ((local % g) + g) % g
        return s - into
    }

    /// The name of file `number` (0: the first) of the period starting at `period`.
    public func path(period: Int64?, number: Int) -> String {
        var name = pattern
        if let period {
            var clock = time_t(period)
            var parts = tm()
            localtime_r(&clock, &parts)
            var buffer = [CChar](repeating: 0, count: 4096)
            let n = strftime(&buffer, buffer.count, pattern, &parts)
            if n > 0 { name = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        }
        guard number > 0 else { return name }
        // Before the extension of the file name (not of a directory), so each file keeps its type.
        let slash = name.lastIndex(of: "/").map { name.index(after: $0) } ?? name.startIndex
        if let dot = name[slash...].lastIndex(of: "."), dot > slash {
            return "\(name[..<dot]).\(number)\(name[dot...])"
        }
        return "\(name).\(number)"
    }
}

/// A file of a rotated output: written under a temporary name, moved into place when complete.
public protocol RotatedFile: AnyObject {
    /// The bytes it holds so far, written or waiting to be (a HAR's spilled entries): `-C`.
    var size: Int { get }
    /// Completes it (a HAR writes its document) and moves it into place as `name`.
    func complete(as name: String, comment: String?) throws(OutputError)
}

/// Opens, closes and names the files of one rotated output. Files open when there is something
/// to write, so a quiet period leaves no empty file. Periods never go back: what completes late
/// (a connection flushed when it went idle) goes to the current file.
///
/// Nothing this run wrote is overwritten: a name still holding one of its files (the time format
/// is coarser than `-G`, or `SIGHUP` came before logrotate moved the file) takes the next number;
/// with a rotation policy, neither is a file that was there before (a restarted service).
/// A name that was freed — logrotate moved the file away, then sent `SIGHUP` — is used again.
public final class Rotator<File: RotatedFile> {
    public let naming: RotationNaming
    private let open: (String) throws(OutputError) -> File
    /// A file that could not be opened or completed: one line for the user.
    public var onError: (String) -> Void = { _ in }
    public private(set) var current: File? = nil
    private var period: Int64? = nil
    /// When the current period ends, in nanoseconds (the common case costs one comparison).
    private var periodEnd: Int64 = .min
    /// The first number a completed file may take in this period: after `-C` the next one, so
    /// the numbers grow with time; after a new period or SIGHUP 0 (a name freed by logrotate).
    private var firstNumber = 0
    private var lastNumber = 0
    /// An open failed: not tried again before the next period, size limit or reopen.
    private var openFailed = false
    /// Files this run put into place, oldest first (`-W`), and their identities.
    private var written: [(path: String, device: UInt64, inode: UInt64)] = []
    public private(set) var filesWritten = 0
    public private(set) var failures = 0

    public init(naming: RotationNaming, open: @escaping (String) throws(OutputError) -> File) {
        self.naming = naming
        self.open = open
    }

    /// The file to write what completed at `t` into (nil: it could not be opened; said once).
    public func file(at t: Timestamp) -> File? {
        advance(to: t)
        if current == nil && !openFailed {
            do { try openCurrent() } catch {
                openFailed = true
                failures += 1
                onError(error.message)
            }
        }
        return current
    }

    private func openCurrent() throws(OutputError) {
        current = try open(naming.path(period: period, number: 0))
    }

    /// Before the run: without `-G`, opens the first file (so a path that cannot be written is
    /// said before anything is read); with it, checks that the current period's directory can
    /// be written. The problem, if any.
    public func prepare(now: Timestamp) -> String? {
        if naming.policy.seconds == nil {
            do { try openCurrent() } catch { return error.message }
            return nil
        }
        let name = naming.path(period: naming.periodStart(of: now), number: 0)
        if access(OutputFile.directory(of: name), W_OK) != 0 {
            return "cannot write '\(name)': \(String(cString: strerror(errno)))"
        }
        return nil
    }

    /// The clock moved to `t` (a packet, a transaction, a live capture's tick): a period that
    /// ended closes its file.
    @inline(__always) public func advance(to t: Timestamp) {
        if t.nanoseconds < periodEnd { return }
        guard let start = naming.periodStart(of: t) else { periodEnd = .max; return }
        if let period, start <= period { return }
        close(comment: nil)
        period = start
        firstNumber = 0
        periodEnd = (start + Int64(naming.policy.seconds ?? 0)) * 1_000_000_000
    }

    /// After each write: `-C`.
    public func wrote() {
        if let limit = naming.policy.bytes, let current, current.size >= limit {
            close(comment: nil)
            firstNumber = lastNumber + 1
        }
    }

    /// `SIGHUP`: the current file is completed now; the next write opens a new one.
    public func reopen() {
        close(comment: nil)
        firstNumber = 0
    }

    /// The end of the run. `ensureFile`: when this run wrote no file at all, one is written
    /// empty (an output named on the command line always exists afterwards).
    public func finish(comment: String?, ensureFile: Bool) {
        if current == nil && ensureFile && filesWritten == 0 {
            openFailed = false
            _ = file(at: .now())
        }
        close(comment: comment)
    }

    private func close(comment: String?) {
        openFailed = false
        guard let file = current else { return }
        current = nil
        let (name, number) = freeName()
        lastNumber = number
        do { try file.complete(as: name, comment: comment) } catch {
            failures += 1
            onError(error.message)
            return
        }
        filesWritten += 1
        var info = stat()
        if stat(name, &info) == 0 { written.append((name, UInt64(info.st_dev), UInt64(info.st_ino))) }
        if let keep = naming.policy.keep {
            while written.count > max(keep, 1) {
                let oldest = written.removeFirst()
                // Only while it is still the file this run wrote there (not moved, not replaced).
                if stat(oldest.path, &info) == 0 && UInt64(info.st_dev) == oldest.device && UInt64(info.st_ino) == oldest.inode {
                    unlink(oldest.path)
                }
            }
        }
    }

    /// The period's name, or the first numbered one that is not taken.
    private func freeName() -> (String, Int) {
        var number = firstNumber
        while true {
            let name = naming.path(period: period, number: number)
            var info = stat()
            guard stat(name, &info) == 0 else { return (name, number) }
            let ours = written.contains { $0.device == UInt64(info.st_dev) && $0.inode == UInt64(info.st_ino) }
            let regular = (info.st_mode & S_IFMT) == S_IFREG
            if !regular || (!ours && naming.policy.isEmpty) { return (name, number) }
            number += 1
        }
    }
}

/// The transactions of a run into rotated files: the end of a sink chain (after the cache
/// judgement and the filter, which keep their state across files). Each file gets a writer of
/// its own, so each is complete and valid alone: a TSV with its header, a HAR per period.
public final class RotatingOutput: OutputSink {
    public final class File: RotatedFile {
        let output: OutputFile
        let sink: OutputSink
        init(output: OutputFile, sink: OutputSink) { self.output = output; self.sink = sink }
        public var size: Int { output.bytesWritten + sink.pendingBytes }
        public func complete(as name: String, comment: String?) throws(OutputError) {
            try sink.finish(comment: comment)
            try output.commit(as: name)
        }
    }

    public let rotator: Rotator<File>
    /// Whether a finished connection is worth a file of its own when none is open (a line of
    /// `--connections`; a HAR's TLS connection, whose transactions may be encrypted).
    private let connectionOpensFile: (Connection) -> Bool
    /// Transactions and connections that had no file to go to (it could not be opened).
    public private(set) var lost = 0

    public init(naming: RotationNaming, connectionOpensFile: @escaping (Connection) -> Bool,
                makeSink: @escaping (OutputFile) -> OutputSink) {
        self.connectionOpensFile = connectionOpensFile
        rotator = Rotator(naming: naming) { path throws(OutputError) in
            let output = try OutputFile(path: path)
            return File(output: output, sink: makeSink(output))
        }
    }

    public func consume(_ transaction: Transaction) {
        let completed = max(transaction.response?.arrival.lastByte ?? .zero, transaction.request?.arrival.lastByte ?? .zero, transaction.startTime)
        guard let file = rotator.file(at: completed) else { lost += 1; return }
        file.sink.consume(transaction)
        rotator.wrote()
    }

    public func connectionFinished(_ connection: Connection) {
        rotator.advance(to: connection.times.last)
        if rotator.current == nil && !connectionOpensFile(connection) { return }
        guard let file = rotator.file(at: connection.times.last) else { lost += 1; return }
        file.sink.connectionFinished(connection)
        rotator.wrote()
    }

    /// Into the file being written, if there is one (a handshake opens none).
    public func connectionSecured(_ secured: SecuredConnection) {
        rotator.advance(to: secured.summary.end)
        guard rotator.current != nil, let file = rotator.file(at: secured.summary.end) else { return }
        file.sink.connectionSecured(secured)
        rotator.wrote()
    }

    /// See `Rotator.prepare`.
    public func prepare() -> String? {
        rotator.prepare(now: Timestamp.now())
    }

    public func finish(comment: String?) throws(OutputError) {
        rotator.finish(comment: comment, ensureFile: true)
        if rotator.failures > 0 || lost > 0 {
            var text = "\(rotator.failures) output file\(rotator.failures == 1 ? "" : "s") could not be written"
            if lost > 0 { text += "; \(lost) transaction\(lost == 1 ? "" : "s") or connection\(lost == 1 ? "" : "s") had no file to go to" }
            throw OutputError(message: text)
        }
    }
}
