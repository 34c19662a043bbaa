#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    private var secrets: [[UInt8]: TLSSecrets] = [:]
    private let paths: [String]
    /// Bytes of each file read so far, up to the end of its last complete line.
    private var consumed: [String: Int] = [:]
    private var lastCheck: Double = 0
    private var mutex = pthread_mutex_t()
    /// Lines that were not `LABEL hex hex` (counted, never shown: they may hold secrets).
    public private(set) var malformedLines = 0
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
        pthread_mutex_init(&mutex, nil)
        for path in paths {
            guard let text = Self.read(path, from: 0) else {
                // Live, the client that will write it may not have started yet.
                if growing && errno == ENOENT { consumed[path] = 0; notYetWritten.append(path); continue }
                throw KeyLogError(message: "cannot read key log '\(path)': \(String(cString: strerror(errno)))")
            }
            let whole = growing ? (text.lastIndex(of: 0x0A).map { $0 + 1 } ?? 0) : text.count
            parse(text[..<whole])
            consumed[path] = whole
        }
    }

    /// A key log from text (tests, pcapng Decryption Secrets Blocks).
    public init(text: String) {
        self.paths = []
        self.growing = false
        pthread_mutex_init(&mutex, nil)
        parse(Array(text.utf8)[...])
    }

    deinit { pthread_mutex_destroy(&mutex) }

    /// Connections with at least one secret.
    public var count: Int {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return secrets.count
    }

    /// More secrets (a pcapng Decryption Secrets Block's key log).
    public func add(text: String) {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        parse(Array(text.utf8)[...])
    }

    /// The secrets logged for the connection whose ClientHello carried `clientRandom`. `wanting`:
    /// read on when those found lack it (a connection waiting for more of its secrets); `now`:
    /// look at the files however recently they were looked at (a connection's last chance).
    public func secrets(forClientRandom clientRandom: [UInt8], wanting: ((TLSSecrets) -> Bool)? = nil,
                        now: Bool = false) -> TLSSecrets? {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        if let s = secrets[clientRandom], !(wanting?(s) ?? false) { return s }
        reloadGrownFiles(now: now)
        return secrets[clientRandom]
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
            var st = stat()
            guard stat(path, &st) == 0 else { continue }
            var start = consumed[path] ?? 0
            let size = Int(st.st_size)
            if size < start { start = 0 }
            guard size > start, let text = Self.read(path, from: start) else { continue }
            // Whole lines only: the writer may be in the middle of one.
            guard let end = text.lastIndex(of: 0x0A) else { continue }
            parse(text[...end])
            consumed[path] = start + end + 1
        }
    }

    private static func read(_ path: String, from offset: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var at = off_t(offset)
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, at) }
            if n < 0 { return nil }
            if n == 0 { return out }
            out.append(contentsOf: buffer[0..<n])
            at += off_t(n)
        }
    }

    private func parse(_ text: ArraySlice<UInt8>) {
        for raw in text.split(separator: 0x0A, omittingEmptySubsequences: true) {
            var line = raw[...]
            while let last = line.last, last == 0x0D || last == 0x20 || last == 0x09 { line = line.dropLast() }
            guard let first = line.first, first != 0x23 else { continue }
            let parts = line.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 })
            guard parts.count == 3 else { malformedLines += 1; continue }
            let written = String(decoding: parts[0], as: UTF8.self)
            guard let random = Self.hex(parts[1]), let secret = Self.hex(parts[2]) else { malformedLines += 1; continue }
            var s = secrets[random] ?? TLSSecrets()
            // Draft-era QUIC tools (quic-go, ngtcp2 and Chromium before RFC 9001) wrote the TLS 1.3
            // labels with a "QUIC_" prefix: the same secrets.
            let label = written.hasPrefix("QUIC_") ? String(written.dropFirst(5)) : written
            switch label {
            case "CLIENT_RANDOM": if random.count == 32 { s.masterSecret = secret }
            case "CLIENT_HANDSHAKE_TRAFFIC_SECRET": s.clientHandshake = secret
            case "SERVER_HANDSHAKE_TRAFFIC_SECRET": s.serverHandshake = secret
            case "CLIENT_TRAFFIC_SECRET_0": s.clientTraffic0 = secret
            case "SERVER_TRAFFIC_SECRET_0": s.serverTraffic0 = secret
            case "CLIENT_EARLY_TRAFFIC_SECRET": s.clientEarly = secret
            default: continue      // RSA, EXPORTER_SECRET, EARLY_EXPORTER_SECRET, …
            }
            secrets[random] = s
        }
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
