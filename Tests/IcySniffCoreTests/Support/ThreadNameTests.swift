import Foundation
import Testing
@testable import IcySniffCore

/// The helper threads carry names (`startThread(named:)`), so that top -H, perf and
/// bench/thread-times can tell the pipeline's threads apart: what the kernel shows for the thread,
/// read by the thread itself from /proc, cut to the kernel's 15 bytes.
@Suite struct ThreadNameTests {
    @Test func aStartedThreadCarriesItsNameCutToFifteenBytes() throws {
        let lock = Lock()
        var seen: String? = nil
        let done = DispatchSemaphore(value: 0)
        let thread = try #require(startThread(named: "icy-a-name-longer-than-15") {
            let comm = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
            lock.withLock { seen = comm?.trimmingCharacters(in: .whitespacesAndNewlines) }
            done.signal()
        })
        done.wait()
        pthread_join(thread, nil)
        #expect(lock.withLock { seen } == "icy-a-name-long")
    }

    @Test func theDecryptionAndExportThreadsAreNamed() throws {
        // The names bench/thread-times and the docs use; a rename must change them together.
        let sources = try ["Sources/IcySniffCore/TLS/DecryptionQueue.swift", "Sources/IcySniffCore/Export/ExportThread.swift"]
            .map { try String(contentsOfFile: $0, encoding: .utf8) }
        let script = try String(contentsOfFile: "bench/thread-times", encoding: .utf8)
        for (source, name) in zip(sources, ["icy-decrypt", "icy-export"]) {
            #expect(source.contains("startThread(named: \"\(name)\""))
            #expect(script.contains(name))
        }
    }
}
