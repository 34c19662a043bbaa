import Testing
import Foundation
@testable import IcySniffCore

/// The HAR writer spills serialised entries and reads them back in another order; every record
/// must come back byte for byte, whether it stayed in memory, went to the file, or is larger than
/// the read-back window.
@Suite struct SpillStoreTests {
    @Test(arguments: [64, 4096, 1 << 20]) func recordsComeBackInAnyOrder(memoryLimit: Int) {
        var rng = SplitMix(state: UInt64(memoryLimit))
        let store = SpillStore(memoryLimit: memoryLimit)
        var records: [(offset: Int, bytes: [UInt8])] = []
        for k in 0..<600 {
            // Mostly small records, a few past the memory limit, one past the 1 MiB window.
            let length = k == 300 ? (3 << 19) : (k % 97 == 0 ? memoryLimit + 17 : Int(rng.next() % 3000))
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            records.append((bytes.withUnsafeBufferPointer { store.append($0) }, bytes))
        }
        // Sequential (the common case: nearly sorted), then shuffled, then backwards.
        var order = Array(records.indices)
        for pass in 0..<3 {
            if pass == 1 { order.shuffle(using: &rng) }
            if pass == 2 { order.reverse() }
            for i in order {
                let r = records[i]
                var back: [UInt8] = []
                #expect(store.withBytes(offset: r.offset, length: r.bytes.count) { back = Array($0) })
                #expect(back == r.bytes, "record \(i) (\(r.bytes.count) bytes), pass \(pass)")
            }
        }
    }
}

/// Spilling that fails never loses a record silently.
@Suite struct SpillStoreFailureTests {
    static func records(_ store: SpillStore, count: Int) -> [(offset: Int, bytes: [UInt8])] {
        var rng = SplitMix(state: 77)
        return (0..<count).map { _ in
            let bytes = (0..<Int(rng.next() % 200 + 1)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            return (bytes.withUnsafeBufferPointer { store.append($0) }, bytes)
        }
    }

    /// A disk that is full (/dev/full: every write fails with ENOSPC): everything stays in memory.
    @Test func aFullDiskKeepsTheRecordsInMemory() throws {
        let full = try #require(fopen("/dev/full", "w+"))
        let store = SpillStore(memoryLimit: 256, file: full)
        let records = Self.records(store, count: 300)
        #expect(store.spillFailed)
        for r in records {
            var back: [UInt8] = []
            #expect(store.withBytes(offset: r.offset, length: r.bytes.count) { back = Array($0) })
            #expect(back == r.bytes)
        }
        #expect(store.readFailure == nil)
    }

    /// The temporary file cut short behind the store's back: the records past its end are reported,
    /// not returned empty; those still in memory come back.
    @Test func aTruncatedFileIsReportedAndTheRestComesBack() throws {
        let file = try #require(tmpfile())
        let store = SpillStore(memoryLimit: 256, file: file)
        let records = Self.records(store, count: 300)
        #expect(!store.spillFailed)
        #expect(ftruncate(fileno(file), 100) == 0)
        var lost = 0
        for r in records {
            var back: [UInt8]? = nil
            if store.withBytes(offset: r.offset, length: r.bytes.count, { back = Array($0) }) {
                #expect(back == r.bytes)
            } else {
                lost += 1
            }
        }
        #expect(lost > 200 && lost < 300, "records in the file are lost (\(lost)), those in memory are not")
        #expect(store.readFailure != nil)
    }

    /// A HAR whose spilled entries cannot be read back stays valid JSON without them, and its
    /// output fails with the reason (exit code 3 in the tool).
    @Test func harWithLostEntriesIsValidJSONAndTheOutputFails() throws {
        let path = Paths.corpusFile("zeek/1000-requests-one-dropped-response.pcap.gz")
        let file = try #require(tmpfile())
        var options = ExportOptions()
        options.pretty = false
        let writer = HARWriter(options: options, spill: SpillStore(memoryLimit: 4096, file: file))
        let pipeline = Pipeline(sink: writer)
        _ = pipeline.run(try PcapSource.open(path: path))
        pipeline.finish()
        #expect(ftruncate(fileno(file), 0) == 0)
        let out = OutputFile(memory: true)
        writer.write(to: out)
        let text = String(decoding: out.takeBytes(), as: UTF8.self)
        let json = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        let entries = ((json?["log"] as? [String: Any])?["entries"] as? [Any]) ?? []
        #expect(entries.count > 0 && entries.count < 1000, "\(entries.count) entries kept")
        #expect(throws: OutputError.self) { try out.commit() }
    }
}
