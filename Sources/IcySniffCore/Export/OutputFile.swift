#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Errors writing output: one line for the user.
public struct OutputError: Error, Sendable {
    public var message: String
}

/// Buffered output to standard output or to a file. A file is written under a temporary name in
/// the same directory and renamed into place by `commit()`, so an interrupted run never leaves a
/// truncated file behind.
public final class OutputFile {
    private var fd: Int32
    private let finalPath: String?
    private let temporaryPath: String?
    private var buffer: [UInt8] = []
    private var failed: String? = nil
    private var committed = false
    private let inMemory: Bool
    /// Bytes written so far, buffered or not (`-C` rotates on it).
    public private(set) var bytesWritten = 0
    /// Where `commit()` puts the file (nil: standard output or memory).
    public var path: String? { finalPath }

    /// Standard output.
    public init() {
        fd = 1
        finalPath = nil
        temporaryPath = nil
        inMemory = false
        buffer.reserveCapacity(1 << 16)
    }

    /// Output kept in memory (batch workers render here; `takeBytes()` hands it over).
    public init(memory: Bool) {
        fd = -1
        finalPath = nil
        temporaryPath = nil
        self.inMemory = true
    }

    /// The bytes written so far (memory output only), leaving it empty.
    public func takeBytes() -> [UInt8] {
        defer { buffer = [] }
        return buffer
    }

    /// A file at `path`. A regular file (new or existing, also behind a symbolic link) is written
    /// atomically: under a temporary name in its directory, renamed into place by `commit()`, with
    /// the existing file's permissions. Anything else that exists — a device such as `/dev/null`,
    /// a FIFO, a socket — is written directly: renaming over it would replace it with a file.
    public init(path: String) throws(OutputError) {
        inMemory = false
        var target = path
        var info = stat()
        // A new file gets what open(2) would give it: 0666 less the umask (mkstemp makes 0600).
        var mode: mode_t = 0o666 & ~OutputFile.processUmask
        if stat(path, &info) == 0 {
            if (info.st_mode & S_IFMT) != S_IFREG {
                let f = open(path, O_WRONLY | O_CLOEXEC)
                if f < 0 { throw OutputError(message: "cannot write '\(path)': \(String(cString: strerror(errno)))") }
                fd = f
                finalPath = path
                temporaryPath = nil
                buffer.reserveCapacity(1 << 16)
                return
            }
            mode = info.st_mode & 0o7777
            // Through a symbolic link: replace the file it names, not the link.
            if let resolved = realpath(path, nil) {
                target = String(cString: resolved)
                free(resolved)
            }
        }
        let dir = Self.directory(of: target)
        let base = target.split(separator: "/").last.map(String.init) ?? target
        var template = Array("\(dir)/.\(base).XXXXXX".utf8CString)
        let f = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if f < 0 {
            throw OutputError(message: "cannot write '\(path)': \(String(cString: strerror(errno)))")
        }
        fchmod(f, mode)
        fd = f
        finalPath = target
        temporaryPath = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        temporarySlot = TemporaryFiles.register(temporaryPath!)
        buffer.reserveCapacity(1 << 16)
        if let report = Self.staleTemporaryFile {
            for stale in Self.staleTemporaryFiles(in: dir, base: base, except: temporaryPath!) { report(stale) }
        }
    }

    /// Called with each temporary file of an earlier run writing the same output that was
    /// killed before it could remove it (`.NAME.XXXXXX` beside the output). Reported, not
    /// removed: another run may be writing it now.
    nonisolated(unsafe) public static var staleTemporaryFile: ((String) -> Void)? = nil

    /// The hidden names of each directory looked at (read once per directory and run, so that
    /// a batch writing thousands of outputs into one folder does not read it thousands of times).
    nonisolated(unsafe) private static var hiddenNames: [String: [String]] = [:]
    private static let hiddenNamesLock = Lock()

    static func staleTemporaryFiles(in dir: String, base: String, except own: String) -> [String] {
        let names: [String] = hiddenNamesLock.withLock {
            if let names = hiddenNames[dir] { return names }
            var list: [String] = []
            if let d = opendir(dir) {
                while let entry = readdir(d) {
                    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                    }
                    if name.hasPrefix("."), name.utf8.count > 8 { list.append(name) }
                }
                closedir(d)
            }
            hiddenNames[dir] = list
            return list
        }
        let prefix = ".\(base)."
        var found: [String] = []
        for name in names where name.hasPrefix(prefix) && name.utf8.count == prefix.utf8.count + 6 {
            let path = dir == "/" ? "/\(name)" : "\(dir)/\(name)"
            var st = stat()
            guard path != own, lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
            found.append(path)
        }
        return found.sorted()
    }

    /// Where this file's temporary name is registered for `TemporaryFiles.removeAll`.
    private var temporarySlot: Int? = nil

    /// The directory a path names its file in ("." for a bare name, "/" for one at the root).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return path[..<slash].isEmpty ? "/" : String(path[..<slash])
    }

    /// The process's file-creation mask. Read from /proc (Linux 4.7+) because the portable way,
    /// `umask(0)` then `umask(old)`, changes it for a moment for every thread, and batch workers
    /// create files in parallel.
    static let processUmask: mode_t = {
        if let f = fopen("/proc/self/status", "r") {
            defer { fclose(f) }
            var line = [CChar](repeating: 0, count: 256)
            while fgets(&line, Int32(line.count), f) != nil {
                let text = String(cBuffer: line)
                if text.hasPrefix("Umask:"), let value = mode_t(String(text.dropFirst(6)).trimmingCharacters(in: " \t\n"), radix: 8) {
                    return value
                }
            }
        }
        let old = umask(0o022)
        umask(old)
        return old
    }()

    deinit {
        // A file output not committed (an error or an interrupted run): close it, and drop the
        // temporary file so nothing half-written is left.
        if let temporarySlot { TemporaryFiles.unregister(temporarySlot) }
        guard finalPath != nil, !committed else { return }
        close(fd)
        if let temporaryPath { unlink(temporaryPath) }
    }

    public var isTerminal: Bool { !inMemory && isatty(fd) == 1 }

    /// Called when standard output's reader has gone (EPIPE: `icy-sniff … | head`). The command
    /// line ends the process quietly with 0, as the reader asked for no more; nil: the write
    /// fails like any other.
    nonisolated(unsafe) public static var readerWentAway: (() -> Never)? = nil

    @inline(__always) public func write(_ bytes: [UInt8]) {
        bytesWritten &+= bytes.count
        buffer.append(contentsOf: bytes)
        if buffer.count >= 1 << 16 && !inMemory { flush() }
    }

    @inline(__always) public func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        bytesWritten &+= bytes.count
        buffer.append(contentsOf: bytes)
        if buffer.count >= 1 << 16 && !inMemory { flush() }
    }

    public func write(_ s: String) {
        bytesWritten &+= s.utf8.count
        buffer.append(contentsOf: s.utf8)
        if buffer.count >= 1 << 16 && !inMemory { flush() }
    }

    public func flush() {
        if inMemory { return }
        guard !buffer.isEmpty, failed == nil else { buffer.removeAll(keepingCapacity: true); return }
        buffer.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    if errno == EPIPE && finalPath == nil, let readerWentAway = Self.readerWentAway { readerWentAway() }
                    failed = String(cString: strerror(errno))
                    return
                }
                offset += n
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Marks the output as failed (the writer could not produce all of it): `commit` throws with
    /// `reason` and a file is not moved into place.
    public func fail(_ reason: String) {
        flush()   // what was produced still goes out
        if failed == nil { failed = reason }
    }

    /// Flushes and, for a file, moves it into place. Throws if anything could not be written.
    /// `name`: another final name in the same directory (a rotated output chooses it when the
    /// file is complete, so a name that was freed meanwhile — logrotate moved it — is used).
    public func commit(as renamed: String? = nil) throws(OutputError) {
        if inMemory {
            if let failed { throw OutputError(message: "cannot write the output: \(failed)") }
            return
        }
        flush()
        // A rotated file is renamed to its number's name: every message names that file, not
        // the pattern's first name it was opened under.
        let target = finalPath.map { renamed ?? $0 }
        if let failed {
            throw OutputError(message: "cannot write \(target.map { "'\($0)'" } ?? "standard output"): \(failed)")
        }
        guard let finalPath = target else { return }
        guard let temporaryPath else {
            // Written directly (a device or FIFO): nothing to move.
            close(fd)
            committed = true
            return
        }
        if fsync(fd) != 0 && errno != EINVAL {
            throw OutputError(message: "cannot write '\(finalPath)': \(String(cString: strerror(errno)))")
        }
        close(fd)
        if let temporarySlot {
            TemporaryFiles.unregister(temporarySlot)
            self.temporarySlot = nil
        }
        if rename(temporaryPath, finalPath) != 0 {
            let reason = String(cString: strerror(errno))
            unlink(temporaryPath)
            committed = true
            throw OutputError(message: "cannot write '\(finalPath)': \(reason)")
        }
        committed = true
    }
}

/// The temporary files of outputs being written (`-o`, `--out-dir`, rotated files), for a process
/// that must end at once (a second SIGINT or SIGTERM): `removeAll` runs in the signal handler, so
/// it only reads fixed slots of C strings and calls unlink(2), both async-signal-safe. A slot is
/// filled before its file is written to and emptied before its file is renamed into place.
public enum TemporaryFiles {
    static let slots = 64
    nonisolated(unsafe) private static let paths = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: slots)
    nonisolated(unsafe) private static var ready: Bool = {
        paths.initialize(repeating: nil, count: slots)
        return true
    }()
    private static let lock = Lock()

    /// Makes the slots before any signal can come (Swift initialises statics lazily, which is
    /// not for a signal handler to do): `Signals.install` calls it.
    public static func prepare() {
        lock.withLock { _ = ready }
    }

    /// Registers a temporary file; nil when every slot is taken (its file is then not removed by
    /// a second signal, only by `deinit` as before).
    static func register(_ path: String) -> Int? {
        lock.withLock {
            _ = ready
            for i in 0..<slots where paths[i] == nil {
                paths[i] = strdup(path)
                return i
            }
            return nil
        }
    }

    static func unregister(_ slot: Int) {
        lock.withLock {
            let p = paths[slot]
            paths[slot] = nil
            free(p)
        }
    }

    /// Unlinks every registered temporary file; answers how many. Async-signal-safe once
    /// `prepare` has run.
    public static func removeAll() -> Int {
        var n = 0
        for i in 0..<slots {
            if let p = paths[i] {
                unlink(p)
                n += 1
            }
        }
        return n
    }
}
