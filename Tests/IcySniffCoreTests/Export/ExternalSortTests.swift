import Testing
import Foundation
@testable import IcySniffCore

/// The indexes of the reordered outputs are sorted in runs on disk past their memory limit; the
/// order that comes out must be the order of a plain sort, whatever the runs.
@Suite struct ExternalSortTests {
    struct Record: Equatable { var key: UInt32; var sequence: Int }

    @Test(arguments: [0, 1, 15, 16, 17, 1000, 20_000]) func givesEveryRecordInOrder(count: Int) {
        var rng = SplitMix(state: UInt64(count) &+ 5)
        // 256 bytes of memory: 16 records per run; few distinct keys, so ties must keep their order
        // by the second field.
        let sort = ExternalSort<Record>(memoryLimit: 256) { ($0.key, $0.sequence) < ($1.key, $1.sequence) }
        var records: [Record] = []
        for k in 0..<count {
            let r = Record(key: UInt32(rng.next() % 50), sequence: k)
            records.append(r)
            sort.append(r)
        }
        #expect(sort.count == count)
        #expect(sort.runCount == max(0, (count - 1) / 16), "runs on disk")
        var out: [Record] = []
        #expect(sort.inOrder { out.append($0) } == count)
        #expect(out == records.sorted { ($0.key, $0.sequence) < ($1.key, $1.sequence) })
        #expect(sort.readFailure == nil)
        // Again: the same (a HAR may be written twice).
        var again: [Record] = []
        sort.inOrder { again.append($0) }
        #expect(again == out)
    }

    /// A disk that is full: the records stay in memory and none is lost.
    @Test func aFullDiskKeepsTheRecordsInMemory() throws {
        let full = try #require(fopen("/dev/full", "w+"))
        let sort = ExternalSort<Int>(memoryLimit: 128, file: full) { $0 < $1 }
        for k in (0..<500).reversed() { sort.append(k) }
        #expect(sort.spillFailed)
        var out: [Int] = []
        #expect(sort.inOrder { out.append($0) } == 500)
        #expect(out == Array(0..<500))
    }

    /// The file cut short behind its back: what is lost is counted and said, the rest comes out.
    @Test func aTruncatedFileIsReported() throws {
        let file = try #require(tmpfile())
        let sort = ExternalSort<Int>(memoryLimit: 128, file: file) { $0 < $1 }
        for k in 0..<500 { sort.append(k) }
        #expect(ftruncate(fileno(file), 64) == 0)
        var out: [Int] = []
        let given = sort.inOrder { out.append($0) }
        #expect(given < 500 && given == out.count)
        #expect(out == out.sorted())
        #expect(sort.readFailure != nil)
    }

    /// A HAR whose index went to disk in many runs is the same document, byte for byte.
    @Test func harIndexedOnDiskIsTheSameDocument() throws {
        let path = Paths.corpusFile("zeek/1000-requests-one-dropped-response.pcap.gz")
        func har(indexMemory: Int) throws -> [UInt8] {
            let writer = HARWriter(options: ExportOptions(), spill: SpillStore(), indexMemory: indexMemory)
            let pipeline = Pipeline(sink: writer)
            _ = pipeline.run(try PcapSource.open(path: path))
            pipeline.finish()
            let out = OutputFile(memory: true)
            writer.write(to: out)
            return out.takeBytes()
        }
        let plain = try har(indexMemory: 4 << 20)
        let runs = try har(indexMemory: 512)
        #expect(plain.count > 100_000)
        #expect(plain == runs)
    }
}
