import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import IcySniffCore
import Synchronization

/// The export thread hands every sink call over, in the pipeline's order, on another thread; and
/// what the sink makes of them is what it makes without the thread.
@Suite struct ExportThreadTests {
    /// Records the calls it gets, and on which thread.
    final class RecordingSink: TransactionSink {
        var log: [String] = []
        var threads: Set<UInt> = []
        let har = HARWriter()
        func consume(_ t: Transaction) {
            threads.insert(UInt(pthread_self()))
            log.append("T\(t.sequence) C\(t.connection.id) d\(t.depth) \(t.request?.method ?? "-") \(t.response?.status ?? 0)")
            har.consume(t)
        }
        func connectionFinished(_ c: Connection) {
            threads.insert(UInt(pthread_self()))
            log.append("end C\(c.id) \(c.packets)")
            har.connectionFinished(c)
        }
        func harText() -> String {
            let out = OutputFile(memory: true)
            har.write(to: out)
            return String(decoding: out.takeBytes(), as: UTF8.self)
        }
    }

    func run(_ path: String, threaded: Bool) throws -> RecordingSink {
        let sink = RecordingSink()
        let thread = threaded ? ExportThread(sink: sink) : nil
        if threaded { #expect(thread != nil, "the export thread starts") }
        let pipeline = Pipeline(sink: thread ?? sink)
        let source = try PcapSource.open(path: path)
        _ = pipeline.run(source)
        pipeline.finish()
        thread?.finish()
        return sink
    }

    @Test(arguments: ["zeek/1000-requests-one-dropped-response.pcap.gz", "pcap2har/out-of-order.pcap.gz"])
    func sameCallsInTheSameOrderOnAnotherThread(_ capture: String) throws {
        let path = Paths.corpusFile(capture)
        let direct = try run(path, threaded: false)
        let threaded = try run(path, threaded: true)
        #expect(direct.log.count > 250, "a capture with many transactions (\(direct.log.count) calls)")
        #expect(threaded.log == direct.log)
        #expect(threaded.harText() == direct.harText())
        #expect(direct.threads == [UInt(pthread_self())])
        #expect(threaded.threads.count == 1 && !threaded.threads.contains(UInt(pthread_self())),
                "every call was made on the export thread")
    }

    /// With `settleDecodingOnExport`, compressed bodies end on the pipeline's thread with their
    /// bytes still held, and are inflated on the export thread before any sink sees them: the
    /// decoded sizes, flags and HAR are those of a run that inflates each body as it ends.
    @Test(arguments: ["pcap2har/sajal.pcap.gz", "pcap2har/out-of-order.pcap.gz", "zeek/get-gzip.pcap"])
    func inflatesLeftToTheExportThreadGiveTheSameOutputs(_ capture: String) throws {
        let path = Paths.corpusFile(capture)
        let direct = try run(path, threaded: false)
        let sink = RecordingSink()
        let thread = try #require(ExportThread(sink: sink))
        var options = PipelineOptions()
        options.http.settleDecodingOnExport = true
        let pipeline = Pipeline(sink: thread, options: options)
        _ = pipeline.run(try PcapSource.open(path: path))
        pipeline.finish()
        thread.finish()
        #expect(thread.settledHere > 0, "some inflates were left to the export thread")
        #expect(sink.log == direct.log)
        #expect(sink.harText() == direct.harText())
    }

    @Test func finishWithNothingHandedOverAndTwice() throws {
        let sink = RecordingSink()
        let thread = try #require(ExportThread(sink: sink))
        thread.finish()
        thread.finish()
        #expect(sink.log.isEmpty)
    }

    /// A transaction keeping a large body is written before the pipeline reads on (two 16 MiB
    /// bodies are never held at once); small ones are handed over in batches.
    @Test func aLargeBodyIsWrittenBeforeThePipelineReadsOn() throws {
        final class Counting: TransactionSink {
            let count = Atomic(0)
            func consume(_ t: Transaction) { usleep(20_000); count.add(1, ordering: .sequentiallyConsistent) }
            func connectionFinished(_ c: Connection) {}
        }
        let sink = Counting()
        let thread = try #require(ExportThread(sink: sink))
        var options = PipelineOptions()
        options.http.keepBodies = true
        let pipeline = Pipeline(sink: thread, options: options)
        let wire = TCPWire(pipeline: pipeline, clientPort: 40200)
        wire.send(fromClient: true, [.syn], seq: 0)
        wire.send(fromClient: false, [.syn, .ack], seq: 0, ack: 1)
        wire.send(fromClient: true, [.ack], seq: 1, ack: 1)
        var c: UInt32 = 1, s: UInt32 = 1
        for size in [100, 5 << 20] {
            let get = "GET /\(size) HTTP/1.1\r\nHost: h\r\n\r\n"
            wire.send(fromClient: true, seq: c, ack: s, get)
            c += UInt32(get.utf8.count)
            let reply = "HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n" + String(repeating: "x", count: size)
            wire.send(fromClient: false, seq: s, ack: c, reply)
            s += UInt32(reply.utf8.count)
        }
        // Both written: the large one before its send returned, the small one with it.
        #expect(sink.count.load(ordering: .sequentiallyConsistent) == 2)
        pipeline.finish()
        thread.finish()
        #expect(sink.count.load(ordering: .sequentiallyConsistent) == 2)
    }
}
