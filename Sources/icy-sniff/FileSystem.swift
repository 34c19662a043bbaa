#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CIcyShims

/// The few file-system and process facts the command line needs, straight from libc: the tool
/// links no Foundation (its runtime and ICU would be most of the binary and of the start-up time).
enum FileSystem {
    enum Kind { case missing, directory, file, other }

    /// A small text file whole (at most `limit` bytes: a lease file, not a capture); nil with
    /// errno set when it cannot be read.
    static func readText(_ path: String, limit: Int = 64 << 20) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count < limit {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return nil }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// What `path` is, following symbolic links.
    static func kind(of path: String) -> Kind {
        var st = stat()
        guard stat(path, &st) == 0 else { return .missing }
        switch st.st_mode & S_IFMT {
        case S_IFDIR: return .directory
        case S_IFREG: return .file
        default: return .other
        }
    }

    /// Size in bytes (following symbolic links), nil when it cannot be read.
    static func size(of path: String) -> Int64? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Int64(st.st_size)
    }

    /// Modification time in nanoseconds since the epoch (following symbolic links).
    static func modificationTime(of path: String) -> Int64? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
    }

    /// Every regular file below `directory` (and every link to one), as paths relative to it.
    /// FIFOs, sockets and devices are not listed: opening one could wait forever. Symbolic links
    /// are never descended (a link to a directory is neither listed nor walked, so a loop of
    /// links cannot trap the walk). Nil when `directory` cannot be read;
    /// subdirectories that cannot be read are reported in `unreadable`, FIFOs, sockets and
    /// devices in `special` (with what they are).
    static func walk(_ directory: String, unreadable: inout [String], special: inout [(path: String, kind: String)]) -> [String]? {
        guard let top = opendir(directory) else { return nil }
        var found: [String] = []
        var pending: [(dir: OpaquePointer, relative: String)] = [(top, "")]
        while let (dir, relative) = pending.popLast() {
            defer { closedir(dir) }
            var subdirectories: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
                }
                if name == "." || name == ".." { continue }
                let rel = relative.isEmpty ? name : relative + "/" + name
                let full = join(directory, rel)
                var st = stat()
                guard lstat(full, &st) == 0 else { continue }
                switch st.st_mode & S_IFMT {
                case S_IFDIR: subdirectories.append(rel)
                case S_IFLNK: if kind(of: full) == .file { found.append(rel) }
                case S_IFREG: found.append(rel)
                case S_IFIFO: special.append((full, "a FIFO"))
                case S_IFSOCK: special.append((full, "a socket"))
                case S_IFCHR, S_IFBLK: special.append((full, "a device"))
                default: continue
                }
            }
            for sub in subdirectories {
                if let d = opendir(join(directory, sub)) { pending.append((d, sub)) } else { unreadable.append(join(directory, sub)) }
            }
        }
        return found
    }

    /// Creates `path` and its missing parents (like `mkdir -p`). Throws the errno text.
    static func makeDirectories(_ path: String) throws(FileSystemError) {
        if path.isEmpty || kind(of: path) == .directory { return }
        let parent = deletingLastComponent(path)
        if parent != path && !parent.isEmpty { try makeDirectories(parent) }
        if mkdir(path, 0o777) != 0 && errno != EEXIST { throw FileSystemError(errno: errno) }
        if kind(of: path) != .directory { throw FileSystemError(errno: ENOTDIR) }
    }

    static func join(_ a: String, _ b: String) -> String {
        if a.isEmpty { return b }
        return a.hasSuffix("/") ? a + b : a + "/" + b
    }

    static func lastComponent(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1 && p.hasSuffix("/") { p = p.dropLast() }
        guard let slash = p.lastIndex(of: "/"), p.count > 1 else { return String(p) }
        return String(p[p.index(after: slash)...])
    }

    static func deletingLastComponent(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1 && p.hasSuffix("/") { p = p.dropLast() }
        guard let slash = p.lastIndex(of: "/") else { return "" }
        if slash == p.startIndex { return "/" }
        return String(p[..<slash])
    }
}

struct FileSystemError: Error {
    let errno: Int32
    var message: String { String(cString: strerror(errno)) }
}

/// Seconds on the monotonic clock (for elapsed times).
func monotonicSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}


extension Double {
    /// Fixed-point text with `decimals` digits after the point (no locale, no Foundation).
    func fixed(_ decimals: Int) -> String {
        guard isFinite else { return "\(self)" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let negative = self < 0
        let scaled = (abs(self) * scale).rounded()
        guard scaled < 9e18 else { return "\(self)" }
        let n = Int64(scaled)
        let whole = n / Int64(scale), frac = n % Int64(scale)
        var s = (negative && n != 0 ? "-" : "") + String(whole)
        if decimals > 0 {
            let f = String(frac)
            s += "." + String(repeating: "0", count: decimals - f.count) + f
        }
        return s
    }
}
