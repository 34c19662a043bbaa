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
/// secret, `LABEL <client random, hex> <secret, hex>`. Comments (`#`), blank lines, CRLF line
/// ends, labels icy-sniff does not use (EXPORTER_SECRET, …) and keys of other connections are
/// fine. `RSA` lines (a pre-master secret by its encrypted prefix) are not used: a key log that
/// has them has the connection's `CLIENT_RANDOM` too.
///
/// Shared by every pipeline of a run (batch workers): look-ups take a lock. A file that is still
/// being written (a live capture, a browser connecting) is read again when a connection's
/// secrets are not found, at most once a second.
public final class KeyLog: @unchecked Sendable {
    private var secrets: [[UInt8]: TLSSecrets] = [:]
    private let paths: [String]
    private var sizes: [String: Int] = [:]
    private var lastReload: Double = 0
    private var mutex = pthread_mutex_t()
    /// Lines that were not `LABEL hex hex` (counted, never shown: they may hold secrets).
    public private(set) var malformedLines = 0

    /// Reads the files now; an unreadable file is the user's error.
    public init(paths: [String]) throws(KeyLogError) {
        self.paths = paths
        pthread_mutex_init(&mutex, nil)
        for path in paths {
            guard let text = Self.read(path) else {
                throw KeyLogError(message: "cannot read key log '\(path)': \(String(cString: strerror(errno)))")
            }
            parse(text)
            sizes[path] = text.count
        }
    }

    /// A key log from text (tests, pcapng Decryption Secrets Blocks).
    public init(text: String) {
        self.paths = []
        pthread_mutex_init(&mutex, nil)
        parse(Array(text.utf8))
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
        parse(Array(text.utf8))
    }

    /// The secrets logged for the connection whose ClientHello carried `clientRandom`.
    public func secrets(forClientRandom clientRandom: [UInt8]) -> TLSSecrets? {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        if let s = secrets[clientRandom] { return s }
        reloadGrownFiles()
        return secrets[clientRandom]
    }

    private func reloadGrownFiles() {
        guard !paths.isEmpty else { return }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let seconds = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        guard seconds - lastReload >= 1 else { return }
        lastReload = seconds
        for path in paths {
            var st = stat()
            guard stat(path, &st) == 0, Int(st.st_size) != sizes[path], let text = Self.read(path) else { continue }
            parse(text)
            sizes[path] = text.count
        }
    }

    private static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 { return nil }
            if n == 0 { return out }
            out.append(contentsOf: buffer[0..<n])
        }
    }

    private func parse(_ text: [UInt8]) {
        for raw in text.split(separator: 0x0A, omittingEmptySubsequences: true) {
            var line = raw[...]
            while let last = line.last, last == 0x0D || last == 0x20 || last == 0x09 { line = line.dropLast() }
            guard let first = line.first, first != 0x23 else { continue }
            let parts = line.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 })
            guard parts.count == 3 else { malformedLines += 1; continue }
            let label = String(decoding: parts[0], as: UTF8.self)
            guard let random = Self.hex(parts[1]), let secret = Self.hex(parts[2]) else { malformedLines += 1; continue }
            var s = secrets[random] ?? TLSSecrets()
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
