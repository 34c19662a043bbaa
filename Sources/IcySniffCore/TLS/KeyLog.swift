#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Errors reading a key log: one line for the user (never a secret).
public struct KeyLogError: Error, Sendable {
    public var message: String
}

/// The secrets of one TLS connection from a key log, found by its ClientHello random.
public struct TLSSecrets: Sendable {
    /// TLS 1.2: the 48-byte master secret (`CLIENT_RANDOM`).
    public var masterSecret: [UInt8]? = nil
    /// TLS 1.3 traffic secrets.
    public var clientHandshake: [UInt8]? = nil
    public var serverHandshake: [UInt8]? = nil
    public var clientTraffic0: [UInt8]? = nil
    public var serverTraffic0: [UInt8]? = nil
    public var clientEarly: [UInt8]? = nil

    public var isEmpty: Bool {
        masterSecret == nil && clientHandshake == nil && serverHandshake == nil && clientTraffic0 == nil
            && serverTraffic0 == nil && clientEarly == nil
    }
}

/// NSS key log files (`SSLKEYLOGFILE`, as browsers, curl and OpenSSL write them): one line per
/// secret, `LABEL <client random, hex> <secret, hex>`. QUIC uses the TLS 1.3 labels (the old
/// `QUIC_`-prefixed ones too). Comments (`#`), blank lines, CRLF line
/// ends, labels icy-sniff does not use (EXPORTER_SECRET, …) and keys of other connections are
/// fine. `RSA` lines (a pre-master secret by its encrypted prefix) are not used: a key log that
/// has them has the connection's `CLIENT_RANDOM` too.
///
/// Shared by every pipeline of a run (batch workers): look-ups take a lock. A file that is still
/// being written (a live capture, a browser connecting) is read on from where it was last read
/// when a connection's secrets are not found, its size checked at most every `recheckInterval`:
/// clients log a connection's secrets just after its ServerHello reaches them, about when the
/// capture sees it (`growing`: the TLS sessions of a live capture wait for them).
public final class KeyLog: @unchecked Sendable {
    /// Every usable line is indexed, chained per client random (by its hash: a collision costs
    /// one more line read, never a wrong secret, since the line read must name the random asked
    /// for), and read back when a connection's ClientHello is looked up. Lines of regular files
    /// stay in the file (16 bytes of index each: a 100 MiB key log held 84 MiB of secrets, most
    /// for connections the capture never had); lines from text and streams (pcapng Decryption
    /// Secrets Blocks, pipes) are kept decoded in `arena`: label, lengths, random, secret, about
    /// 85 bytes a line (a 52 MiB secrets block took 258 MiB).
    private var indexHeads: [Int: Int32] = [:]
    private var arena: [UInt8] = []
    /// `file` of a line kept in `arena`.
    private static let inArena: Int32 = -1
    private var indexLines: [(offset: Int64, file: Int32, next: Int32)] = []
    /// The files indexed lines are in, each kept open: a key log replaced by a new one (a browser
    /// started again) keeps its old lines readable through the old file's descriptor. At most
    /// `maxFiles` (the oldest is closed: its lines are no longer found).
    private var files: [(path: String, fd: Int32, device: UInt64, inode: UInt64)] = []
    static let maxFiles = 64
    /// Secrets read back from the files, for the connections looked up lately.
    private var readBack = BoundedLRU<[UInt8], TLSSecrets>(capacity: 256)
    private let paths: [String]
    /// Bytes of each file read so far, up to the end of its last complete line.
    private var consumed: [String: Int] = [:]
    private var lastCheck: Double = 0
    private let lock = Lock()
    /// Lines that were not `LABEL hex hex` (counted, never shown: they may hold secrets).
    public private(set) var malformedLines = 0
    /// Lines that were `LABEL hex hex` (whatever the label).
    public private(set) var secretLines = 0
    /// Key logs that are streams (pipes, FIFOs) of a live capture: kept open and read on as they
    /// grow, with where their reading stands (`Reading`).
    private var streams: [String: Int32] = [:]
    /// How far a stream's reading got: the part of a line read so far, whether that line is
    /// being skipped (too long), and for the probe, its bytes and key log lines so far. Per
    /// path: one file's unfinished line never runs into the next file's first.
    private struct Reading {
        var line: [UInt8] = []
        var skipping = false
        var bytes = 0
        var keyLines = 0
    }
    private var reading: [String: Reading] = [:]
    /// A line is at most this long (key log lines are under 300 bytes): past it the rest of the
    /// line is skipped, counted malformed, so that a file without line ends (`/dev/zero`) cannot
    /// make the parser hold it whole.
    static let maxLineBytes = 4096
    /// With no key log line in this many bytes of a stream or device, it is refused as not a key log.
    static let probeBytes = 1 << 20
    /// Why the input read was refused (set by `consume`).
    private var notAKeyLog: String? = nil
    /// The files are being written as the capture runs (live capture): a connection whose
    /// secrets are not there yet waits for them (see `TLSSession`).
    public let growing: Bool
    /// Growing key logs that did not exist yet when the run started (read once written).
    public private(set) var notYetWritten: [String] = []
    /// How often at most a growing file's size is looked at again (a `stat` per file).
    static let recheckInterval = 0.005

    /// Reads the files now; an unreadable file is the user's error. `growing`: a live capture,
    /// whose key log a client writes as it connects (a file that does not exist yet is read once
    /// it does; a last line without its line end is a line being written, read once it is whole).
    public init(paths: [String], growing: Bool = false) throws(KeyLogError) {
        self.paths = paths
        self.growing = growing
        for path in paths {
            // Non-blocking open: a FIFO without a writer must not block the run.
            let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else {
                // Live, the client that will write it may not have started yet.
                if growing && errno == ENOENT { consumed[path] = 0; notYetWritten.append(path); continue }
                throw KeyLogError(message: "cannot read key log '\(path)': \(String(cString: strerror(errno)))")
            }
            var st = stat()
            fstat(fd, &st)
            let kind = st.st_mode & S_IFMT
            if kind == S_IFDIR {
                close(fd)
                throw KeyLogError(message: "cannot read key log '\(path)': it is a directory")
            }
            if kind == S_IFREG {
                defer { close(fd) }
                guard let end = consume(fd, path: path, from: 0, seekable: true, wholeLinesOnly: growing) else {
                    throw KeyLogError(message: "cannot read key log '\(path)': \(String(cString: strerror(errno)))")
                }
                consumed[path] = end
            } else {
                // A pipe, a FIFO, a device: read as a stream. Reading files, to its end (blocking
                // reads once a writer is there); live, what is there now, and more as it comes.
                if !growing { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
                guard consume(fd, path: path, from: 0, seekable: false, wholeLinesOnly: growing) != nil else {
                    let reason = String(cString: strerror(errno))
                    close(fd)
                    throw KeyLogError(message: "cannot read key log '\(path)': \(reason)")
                }
                if growing { streams[path] = fd } else { close(fd) }
            }
            if let refused = notAKeyLog {
                streams[path].map { _ = close($0) }
                throw KeyLogError(message: "'\(path)' is not a key log: \(refused)")
            }
        }
    }

    /// A key log from text (tests, pcapng Decryption Secrets Blocks).
    public init(text: String) {
        self.paths = []
        self.growing = false
        parse(Array(text.utf8)[...])
    }

    deinit {
        for fd in streams.values { close(fd) }
        for f in files where f.fd >= 0 { close(f.fd) }
    }

    /// Whether any secret has been read, asked without the lock: every QUIC packet asks (a
    /// capture's Decryption Secrets Blocks may bring the first later). It only turns true.
    public var hasSecrets: Bool { anySecret.load(ordering: .relaxed) }
    private let anySecret = Atomic<Bool>(false)

    /// Connections with at least one secret.
    public var count: Int { lock.withLock { indexHeads.count } }

    /// More secrets (a pcapng Decryption Secrets Block's key log).
    public func add(text: String) {
        lock.withLock { parse(Array(text.utf8)[...]) }
    }

    /// More secrets, as the bytes of key log lines (a pcapng Decryption Secrets Block).
    public func add(bytes: [UInt8]) {
        lock.withLock { parse(bytes[...]) }
    }

    /// A pcapng Decryption Secrets Block's key log: a temporary file's lines are indexed by
    /// offset (read back when asked for, as a key log file's), in-memory text is parsed.
    public func add(_ text: SecretsText) {
        switch text {
        case .bytes(let bytes): add(bytes: bytes)
        case .file(let f):
            lock.withLock {
                blocks += 1
                _ = consume(f.descriptor, path: "decryption secrets block \(blocks)", from: 0, seekable: true, wholeLinesOnly: false)
            }
        }
    }
    /// Decryption Secrets Blocks added from temporary files (their slots' names).
    private var blocks = 0

    /// The secrets logged for the connection whose ClientHello carried `clientRandom`. `wanting`:
    /// read on when those found lack it (a connection waiting for more of its secrets); `now`:
    /// look at the files however recently they were looked at (a connection's last chance).
    public func secrets(forClientRandom clientRandom: [UInt8], wanting: ((TLSSecrets) -> Bool)? = nil,
                        now: Bool = false) -> TLSSecrets? {
        return lock.withLock {
            if let s = lookUp(clientRandom), !(wanting?(s) ?? false) { return s }
            reloadGrownFiles(now: now)
            return lookUp(clientRandom)
        }
    }

    /// The newest secrets of one label (its code in `labels`), at most `limit`, looking at no
    /// more than `examined` lines: for a connection whose ClientHello was not captured, whose
    /// random is unknown, tried one by one (`QUICKeyTrial`).
    func newestSecrets(labelled code: Int, limit: Int, examined: Int) -> [(random: [UInt8], secret: [UInt8])] {
        return lock.withLock {
            var found: [(random: [UInt8], secret: [UInt8])] = []
            var line = [UInt8](repeating: 0, count: Self.maxLineBytes + 1)
            for entry in indexLines.reversed().prefix(examined) where found.count < limit {
                if let (lineCode, random, secret) = indexedLine(entry, using: &line), lineCode == code { found.append((random, secret)) }
            }
            return found
        }
    }

    /// An indexed line's label code, random and secret: from `arena`, or read back from its file
    /// into `line` (nil when the file no longer holds such a line there).
    private func indexedLine(_ entry: (offset: Int64, file: Int32, next: Int32), using line: inout [UInt8])
        -> (code: Int, random: [UInt8], secret: [UInt8])? {
        if entry.file == Self.inArena {
            let at = Int(entry.offset)
            let code = Int(arena[at]), randomLength = Int(arena[at + 1]), secretLength = Int(arena[at + 2])
            let start = at + 3
            return (code, Array(arena[start..<(start + randomLength)]),
                    Array(arena[(start + randomLength)..<(start + randomLength + secretLength)]))
        }
        let fd = files[Int(entry.file)].fd
        guard fd >= 0 else { return nil }
        let n = line.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(entry.offset)) }
        guard n > 0 else { return nil }
        let end = line[0..<n].firstIndex(of: 0x0A) ?? n
        guard case .secret(let label, let random, let secret) = Self.classify(line[0..<end]),
              let code = Self.labelCode(label, random: random) else { return nil }
        return (code, random, secret)
    }

    /// What the indexed lines of `random` say (read back once, then remembered until more lines
    /// for it are indexed).
    private func lookUp(_ random: [UInt8]) -> TLSSecrets? {
        guard let head = indexHeads[Self.indexKey(random)] else { return nil }
        if let cached = readBack.value(for: random) { return cached.isEmpty ? nil : cached }
        var fromFiles = TLSSecrets()
        var line = [UInt8](repeating: 0, count: Self.maxLineBytes + 1)
        // The chain is newest first: a label's latest line wins, as when lines are parsed in order.
        var i = head
        while i >= 0 {
            let entry = indexLines[Int(i)]
            i = entry.next
            // The chain is by the random's hash; and a file rewritten since it was indexed may
            // hold another line there: the line must name the random asked for.
            if let (code, lineRandom, secret) = indexedLine(entry, using: &line), lineRandom == random {
                Self.keepFirst(code, secret, in: &fromFiles)
            }
        }
        _ = readBack.set(random, fromFiles)
        return fromFiles.isEmpty ? nil : fromFiles
    }

    /// The labels icy-sniff uses, in the order of their codes (a line in `arena` keeps its code).
    static let labels = ["CLIENT_RANDOM", "CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET",
                         "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0", "CLIENT_EARLY_TRAFFIC_SECRET"]

    /// The code of a label icy-sniff uses; nil for the others (RSA, EXPORTER_SECRET, …) and for a
    /// `CLIENT_RANDOM` line whose random is not the 32 bytes of a TLS 1.2 ClientHello.
    static func labelCode(_ label: String, random: [UInt8]) -> Int? {
        guard let code = labels.firstIndex(of: label), code != 0 || random.count == 32 else { return nil }
        return code
    }

    /// Sets the secret of label `code` unless it is set already: lines are read back newest
    /// first, and a label's latest line wins, as when lines are parsed in order.
    static func keepFirst(_ code: Int, _ secret: [UInt8], in s: inout TLSSecrets) {
        func set(_ field: inout [UInt8]?) { if field == nil { field = secret } }
        switch code {
        case 0: set(&s.masterSecret)
        case 1: set(&s.clientHandshake)
        case 2: set(&s.serverHandshake)
        case 3: set(&s.clientTraffic0)
        case 4: set(&s.serverTraffic0)
        default: set(&s.clientEarly)
        }
    }

    static func indexKey(_ random: [UInt8]) -> Int { random.hashValue }

    /// The slot of the file `fd` (open on `path`) is: the same file as before keeps its slot, a
    /// new one (the path replaced) gets a slot of its own, with a descriptor of its own.
    private func fileSlot(_ fd: Int32, path: String) -> Int32 {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return -1 }
        let device = UInt64(st.st_dev), inode = UInt64(st.st_ino)
        if let i = files.lastIndex(where: { $0.path == path && $0.device == device && $0.inode == inode }) { return Int32(i) }
        if files.filter({ $0.fd >= 0 }).count >= Self.maxFiles, let oldest = files.firstIndex(where: { $0.fd >= 0 }) {
            close(files[oldest].fd)
            files[oldest].fd = -1
        }
        files.append((path, dup(fd), device, inode))
        return Int32(files.count - 1)
    }

    /// Reads what was appended to the files since they were last read (a file that shrank was
    /// replaced: read again from its start).
    private func reloadGrownFiles(now force: Bool) {
        guard !paths.isEmpty else { return }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let seconds = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        guard force || seconds - lastCheck >= Self.recheckInterval else { return }
        lastCheck = seconds
        for path in paths {
            if let fd = streams[path] {
                _ = consume(fd, path: path, from: 0, seekable: false, wholeLinesOnly: true)
                continue
            }
            var st = stat()
            guard stat(path, &st) == 0 else { continue }
            var start = consumed[path] ?? 0
            let size = Int(st.st_size)
            if size < start { start = 0 }
            guard size > start else { continue }
            let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            // Whole lines only: the writer may be in the middle of one.
            if let end = consume(fd, path: path, from: start, seekable: true, wholeLinesOnly: true) { consumed[path] = end }
        }
    }

    /// Reads `fd` to its end (from `offset` with pread when `seekable`, else with read, and
    /// from a stream only what is there when it does not block), parsing each line as it comes:
    /// nothing but one line is held. `wholeLinesOnly`: a last line without its line end is left
    /// (a seekable file's is read again next time; a stream's is kept in `partial`). Answers the
    /// offset after the last line parsed, or nil on a read error (`errno`).
    private func consume(_ fd: Int32, path: String, from offset: Int, seekable: Bool, wholeLinesOnly: Bool) -> Int? {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        // A seekable file is read again from its last whole line; a stream goes on where it was.
        var r = seekable ? Reading() : (reading.removeValue(forKey: path) ?? Reading())
        var at = offset
        var lineStart = offset - r.line.count
        let slot = seekable ? fileSlot(fd, path: path) : -1
        func parseLine() {
            let before = secretLines
            if slot >= 0 { index(r.line[...], at: lineStart, file: slot) } else { parse(r.line[...]) }
            if secretLines > before { r.keyLines += 1 }
        }
        while true {
            let n = buffer.withUnsafeMutableBytes { raw -> Int in
                seekable ? pread(fd, raw.baseAddress, raw.count, off_t(at)) : read(fd, raw.baseAddress, raw.count)
            }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                return nil
            }
            if n == 0 { break }
            var i = 0
            while i < n {
                // The rest of this chunk up to the next line end.
                var j = i
                while j < n && buffer[j] != 0x0A { j += 1 }
                if !r.skipping {
                    if r.line.count + (j - i) > Self.maxLineBytes {
                        r.skipping = true
                        malformedLines += 1
                        r.line.removeAll(keepingCapacity: true)
                    } else {
                        r.line.append(contentsOf: buffer[i..<j])
                    }
                }
                if j < n {
                    // A line end.
                    if !r.skipping { parseLine() }
                    r.skipping = false
                    r.line.removeAll(keepingCapacity: true)
                    lineStart = at + j + 1
                }
                i = j + 1
            }
            at += n
            r.bytes += n
            // A stream or device without end (`/dev/zero`): refused once it has shown no key log
            // line for a while. A regular file ends: it is read through, line by line.
            if !seekable && r.keyLines == 0 && r.bytes >= Self.probeBytes {
                notAKeyLog = "no 'LABEL client_random secret' line in its first \(Self.probeBytes >> 20) MiB"
                return at
            }
        }
        if !r.line.isEmpty || r.skipping {
            if wholeLinesOnly {
                if !seekable { reading[path] = r }
                return seekable ? lineStart : at
            }
            if !r.skipping { parseLine() }
        } else if wholeLinesOnly && !seekable {
            reading[path] = r
        }
        return at
    }

    /// One line: nil for a comment or a blank line; `.malformed` for one that is not
    /// `LABEL hex hex`; else its label (without a draft-era "QUIC_" prefix), random and secret.
    enum Line { case malformed, secret(label: String, random: [UInt8], secret: [UInt8]) }

    static func classify(_ raw: ArraySlice<UInt8>) -> Line? {
        var line = raw
        while let last = line.last, last == 0x0D || last == 0x20 || last == 0x09 { line = line.dropLast() }
        guard let first = line.first, first != 0x23 else { return nil }
        let parts = line.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 })
        guard parts.count == 3 else { return .malformed }
        let written = String(decoding: parts[0], as: UTF8.self)
        guard let random = Self.hex(parts[1]), let secret = Self.hex(parts[2]) else { return .malformed }
        // Draft-era QUIC tools (quic-go, ngtcp2 and Chromium before RFC 9001) wrote the TLS 1.3
        // labels with a "QUIC_" prefix: the same secrets.
        let label = written.hasPrefix("QUIC_") ? String(written.dropFirst(5)) : written
        return .secret(label: label, random: random, secret: secret)
    }

    /// Lines from text or a stream: kept in `arena`.
    private func parse(_ text: ArraySlice<UInt8>) {
        var start = text.startIndex
        while start < text.endIndex {
            let end = text[start...].firstIndex(of: 0x0A) ?? text.endIndex
            index(text[start..<end], at: nil, file: Self.inArena)
            start = end + 1
        }
    }

    /// A line, counted (secret lines, malformed lines) and indexed when it holds a secret
    /// icy-sniff uses: where it starts in its file (`offset`), or kept in `arena`.
    private func index(_ raw: ArraySlice<UInt8>, at offset: Int?, file: Int32) {
        guard let line = Self.classify(raw) else { return }
        guard case .secret(let label, let random, let secret) = line else { malformedLines += 1; return }
        secretLines += 1
        guard let code = Self.labelCode(label, random: random), random.count < 256, secret.count < 256 else { return }
        let position = offset ?? arena.count
        if offset == nil {
            arena.append(UInt8(code)); arena.append(UInt8(random.count)); arena.append(UInt8(secret.count))
            arena.append(contentsOf: random); arena.append(contentsOf: secret)
        }
        let key = Self.indexKey(random)
        indexLines.append((Int64(position), file, indexHeads[key] ?? -1))
        indexHeads[key] = Int32(indexLines.count - 1)
        _ = readBack.update(random) { $0 = nil }
        anySecret.store(true, ordering: .relaxed)
    }

    static func hex(_ s: ArraySlice<UInt8>) -> [UInt8]? {
        guard s.count % 2 == 0, !s.isEmpty else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(s.count / 2)
        var i = s.startIndex
        while i < s.endIndex {
            guard let hi = nibble(s[i]), let lo = nibble(s[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }
}
