import Foundation
import Testing

/// Runs the built `icy-sniff` binary (next to the test bundle, or $ICY_SNIFF_BIN).
enum CLI {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let shared = packageRoot.deletingLastPathComponent().appendingPathComponent("shared")

    static var binary: String {
        if let env = ProcessInfo.processInfo.environment["ICY_SNIFF_BIN"] { return env }
        let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidate = dir.appendingPathComponent("icy-sniff").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        return packageRoot.appendingPathComponent(".build/debug/icy-sniff").path
    }

    /// The environment of every child: the test's own, with the Python environment that
    /// scripts/install-deps makes (`.venv`) first on PATH, so `python3` and the scripts'
    /// `#!/usr/bin/env python3` find the packages it installed there.
    static let childEnvironment: [String: String] = {
        var env = ProcessInfo.processInfo.environment
        let venv = packageRoot.appendingPathComponent(".venv/bin")
        if FileManager.default.isExecutableFile(atPath: venv.appendingPathComponent("python3").path) {
            env["PATH"] = venv.path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
            env["VIRTUAL_ENV"] = venv.deletingLastPathComponent().path
        }
        return env
    }()

    struct Result {
        var status: Int32
        var stdout: Data
        var stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    @discardableResult
    static func run(_ arguments: [String], stdin: Data? = nil, executable: String? = nil, environment: [String: String]? = nil) throws -> Result {
        let process = Process()
        // The test runner's threads block signals, and a blocked mask is inherited across exec:
        // start every child through a shim that clears it, so SIGINT reaches tcpdump and icy-sniff.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c",
                             "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])",
                             executable ?? binary] + arguments
        process.currentDirectoryURL = packageRoot
        process.environment = childEnvironment.merging(environment ?? [:]) { $1 }
        // Files rather than pipes: no reader threads, and nothing blocks on a full pipe.
        let dir = temporaryDirectory()
        let outURL = dir.appendingPathComponent("stdout"), errURL = dir.appendingPathComponent("stderr")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let outHandle = try FileHandle(forWritingTo: outURL), errHandle = try FileHandle(forWritingTo: errURL)
        process.standardOutput = outHandle
        process.standardError = errHandle
        if let stdin {
            let inURL = dir.appendingPathComponent("stdin")
            try stdin.write(to: inURL)
            process.standardInput = try FileHandle(forReadingFrom: inURL)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        try process.run()
        process.waitUntilExit()
        try outHandle.close()
        try errHandle.close()
        let outData = try Data(contentsOf: outURL)
        let errData = try Data(contentsOf: errURL)
        try? FileManager.default.removeItem(at: dir)
        return Result(status: process.terminationStatus, stdout: outData, stderr: String(decoding: errData, as: UTF8.self))
    }

    /// A corpus capture the tests use, from the copies in Tests/Fixtures/corpus (a clone of the
    /// repository alone has them; `../shared` is for the conformance tests only).
    static func corpus(_ relative: String) -> String { packageRoot.appendingPathComponent("Tests/Fixtures/corpus/\(relative)").path }
    /// Whether `../shared` is there (CI has it; a lone clone does not).
    static var hasShared: Bool {
        Unchecked.note(FileManager.default.fileExists(atPath: shared.appendingPathComponent("tools/conformance").path),
                       "the conformance, TLS, QUIC and cache corpora (../shared is not beside the project)")
    }
    static func capture(_ name: String) -> String { packageRoot.appendingPathComponent("captures/\(name)").path }
    /// `--keylog` with the key log beside `capture` (its name with `.keys` for `.pcap`), when
    /// there is one; nothing otherwise.
    static func keyLogArguments(beside capture: String) -> [String] {
        let keys = (capture.hasSuffix(".pcap") ? String(capture.dropLast(5)) : capture) + ".keys"
        return FileManager.default.fileExists(atPath: keys) ? ["--keylog", keys] : []
    }

    /// A new folder under the system's temporary directory, removed when the test process ends
    /// (`TemporaryDirectories`): a run of the suite made about 200 and left them behind.
    static func temporaryDirectory() -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("icy-sniff-cli-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        TemporaryDirectories.removeAtExit(dir)
        return dir
    }
}

/// The folders `CLI.temporaryDirectory` made, removed at the process's exit (after every test:
/// a test may hand its folder to a child that outlives its own scope).
enum TemporaryDirectories {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var made: [URL] = []

    static func removeAtExit(_ dir: URL) {
        lock.lock()
        defer { lock.unlock() }
        if made.isEmpty { atexit { TemporaryDirectories.removeAll() } }
        made.append(dir)
    }

    private static func removeAll() {
        lock.lock()
        let list = made
        made = []
        lock.unlock()
        for dir in list { try? FileManager.default.removeItem(at: dir) }
    }
}

/// What this machine could not check, said in one line at the very end of `swift test`'s output
/// (after Swift Testing's summary), so a new user knows which parts a green run did not cover:
/// a lone clone has no `../shared`, a non-root run no live capture, a machine without
/// scripts/install-deps no Python tools. Each test condition that can skip goes through `note`.
enum Unchecked {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var missing: [String] = []

    /// `have`, after recording `what` as not checked when it is false.
    static func note(_ have: Bool, _ what: String) -> Bool {
        if have { return true }
        lock.lock()
        defer { lock.unlock() }
        if missing.isEmpty { atexit { Unchecked.sayWhatWasNotChecked() } }
        if !missing.contains(what) { missing.append(what) }
        return false
    }

    private static func sayWhatWasNotChecked() {
        lock.lock()
        let list = missing
        lock.unlock()
        guard !list.isEmpty else { return }
        FileHandle.standardError.write(Data("icy-sniff tests: not checked on this machine: \(list.joined(separator: "; ")) (see docs/TESTING.md)\n".utf8))
    }
}

extension CLI {
    /// Root: network namespaces, tcpdump on the loopback, changing user.
    static var isRoot: Bool { Unchecked.note(getuid() == 0, "live capture, tcpdump and namespace tests (need root)") }
}

extension Trait where Self == TimeLimitTrait {
    /// The one time limit of the tests that run processes: it catches a hang, never slowness
    /// (speed is scripts/bench's). Swift Testing's clock runs while a test waits for one of the
    /// cooperative threads, and on a 2-core machine other tests' blocking process waits hold both
    /// for minutes: in a CI run whose tests took 9 minutes in all, a test that takes 1.4 s alone
    /// exceeded a 5-minute limit. 30 minutes is more than the whole suite takes and stays within
    /// CI's 90.
    static var hangLimit: Self { .timeLimit(.minutes(30)) }
}
