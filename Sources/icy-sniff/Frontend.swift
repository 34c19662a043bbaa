import IcySniffCore
#if canImport(Glibc)
import Glibc
#endif

/// Runs one analysis: opens the inputs, drives the pipeline, writes the output, and turns what
/// happened into diagnostics and an exit code. The command types stay thin.
struct Frontend {
    var input: InputOptions
    var output: OutputOptions

    enum Exit {
        static let ok: Int32 = 0
        static let damaged: Int32 = 1
        static let badInput: Int32 = 2
        static let outputFailed: Int32 = 3
    }

    func run() -> Int32 {
        var exportOptions = ExportOptions()
        exportOptions.includeBodies = output.bodies
        exportOptions.keepSecrets = output.keepSecrets
        exportOptions.pretty = !output.compact
        var pipelineOptions = PipelineOptions()
        pipelineOptions.http.keepBodies = output.bodies

        let out: OutputFile
        do {
            out = try output.outputPath.map { path throws(OutputError) in try OutputFile(path: path) } ?? OutputFile()
        } catch {
            Diagnostics.error(error.message)
            return Exit.outputFailed
        }

        let format: OutputFormat = output.har ? .har : (output.format ?? (out.isTerminal ? .table : .tsv))
        let sink: any ExportSink
        if output.connections {
            sink = ConnectionListWriter(output: out, format: format)
        } else if format == .har {
            sink = HARSink(writer: HARWriter(options: exportOptions), output: out)
        } else {
            sink = TabularSink(writer: TableWriter(format: TableFormat(format), output: out, options: exportOptions))
        }

        let pipeline = Pipeline(sink: sink, options: pipelineOptions)
        var code = Exit.ok
        var comments: [String] = []
        for path in input.read {
            let source: PcapSource
            do {
                source = try PcapSource.open(path: path, filter: input.filter)
            } catch {
                if case .emptyFile = error {
                    // Nothing to analyse is not a failure: the output says so (no entries).
                    Diagnostics.warning("'\(path)' is empty: no packets")
                    continue
                }
                Diagnostics.error(error.message)
                code = max(code, Exit.badInput)
                if case .badFilter = error { return Exit.badInput }
                continue
            }
            let outcome = pipeline.run(source, maxPackets: input.count)
            switch outcome {
            case .completed, .interrupted:
                break
            case .damaged(let message):
                let text = "'\(path)' is damaged after packet \(source.packetsRead): \(message); the \(source.packetsRead) packets before it were analysed"
                Diagnostics.warning(text)
                comments.append(text)
                if input.strict { code = max(code, Exit.damaged) }
            case .unsupportedLinkType:
                Diagnostics.error(CaptureError.unsupportedLinkType(path: path, dlt: source.dlt, name: source.linkTypeName).message)
                code = max(code, Exit.badInput)
            }
        }
        if let interface = input.interface {
            code = max(code, LiveCapture(interface: interface, input: input).run(pipeline: pipeline))
        }
        pipeline.finish()
        do {
            try sink.finish(comment: comments.isEmpty ? nil : comments.joined(separator: "; "))
            try out.commit()
        } catch {
            Diagnostics.error(error.message)
            return Exit.outputFailed
        }
        if !output.quiet {
            Summary.print(pipeline.stats)
        }
        return code
    }
}

/// A transaction sink that also writes its output at the end.
protocol ExportSink: TransactionSink {
    func finish(comment: String?) throws(OutputError)
}

final class HARSink: ExportSink {
    let writer: HARWriter
    let output: OutputFile
    init(writer: HARWriter, output: OutputFile) { self.writer = writer; self.output = output }
    func consume(_ transaction: Transaction) { writer.consume(transaction) }
    func connectionFinished(_ connection: Connection) { writer.connectionFinished(connection) }
    func finish(comment: String?) throws(OutputError) { writer.write(to: output, comment: comment) }
}

final class TabularSink: ExportSink {
    let writer: TableWriter
    init(writer: TableWriter) { self.writer = writer }
    func consume(_ transaction: Transaction) { writer.consume(transaction) }
    func connectionFinished(_ connection: Connection) {}
    func finish(comment: String?) throws(OutputError) { writer.finish() }
}

enum Summary {
    static func print(_ stats: RunStats) {
        var line = "icy-sniff: \(stats.packets) packets, \(stats.connections) TCP connections, \(stats.transactions) HTTP transactions"
        if stats.malformedPackets > 0 { line += ", \(stats.malformedPackets) malformed packets" }
        let notable = stats.weirds.filter { $0.key != .midstreamPickup }.sorted { $0.value > $1.value }.prefix(6)
        if !notable.isEmpty {
            line += "; anomalies: " + notable.map { "\($0.key.rawValue)×\($0.value)" }.joined(separator: ", ")
        }
        Diagnostics.info(line)
    }
}
