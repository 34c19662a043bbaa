import IcySniffCore
#if canImport(Glibc)
import Glibc
#endif

/// Runs one analysis: opens the inputs, drives the pipeline, writes the output, and turns what
/// happened into diagnostics and an exit code. The command types stay thin.
struct Frontend {
    var input: InputOptions
    var output: OutputOptions
    var filter: TransactionFilter

    struct Failure: Error { var message: String; var code: Int32 }

    enum Exit {
        static let ok: Int32 = 0
        static let damaged: Int32 = 1
        static let badInput: Int32 = 2
        static let outputFailed: Int32 = 3
    }

    func run() -> Int32 {
        if input.interface == nil {
            let expanded = CaptureList.expand(input.read)
            for problem in expanded.problems { Diagnostics.error(problem) }
            if expanded.captures.isEmpty {
                if expanded.problems.isEmpty { Diagnostics.error("no captures found in \(input.read.joined(separator: ", "))") }
                return Exit.badInput
            }
            // --connections lists the connections of all captures in one table (no per-capture outputs).
            if !output.connections && (expanded.captures.count > 1 || output.outDir != nil || expanded.fromDirectory) {
                let code = BatchRunner(frontend: self, captures: expanded.captures, skippedNonCaptures: expanded.skippedNonCaptures).run()
                return expanded.problems.isEmpty ? code : max(code, Exit.badInput)
            }
            var single = self
            single.input.read = expanded.captures.map(\.path)
            let code = single.runSingle()
            return expanded.problems.isEmpty ? code : max(code, Exit.badInput)
        }
        return runSingle()
    }

    var exportOptions: ExportOptions {
        var exportOptions = ExportOptions()
        exportOptions.includeBodies = output.bodies
        exportOptions.keepSecrets = output.keepSecrets
        exportOptions.pretty = !output.compact
        return exportOptions
    }

    var pipelineOptions: PipelineOptions {
        var pipelineOptions = PipelineOptions()
        pipelineOptions.http.keepBodies = output.bodies
        return pipelineOptions
    }

    var fields: [Field] {
        output.fields.map { $0.split(separator: ",").compactMap { Field(rawValue: String($0)) } } ?? Field.defaultColumns
    }

    /// One capture, or a live interface, into one output.
    func runSingle() -> Int32 {
        // Live: the interface is opened first, as root; with -Z privileges are dropped before any
        // output file is created.
        var live: LiveCapture? = nil
        if let interface = input.interface {
            switch LiveCapture.open(interface: interface, input: input) {
            case .success(let capture): live = capture
            case .failure(let failure):
                Diagnostics.error(failure.message)
                return failure.code
            }
        }

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
            sink = HARSink(writer: HARWriter(options: exportOptions), output: out, filter: filter)
        } else {
            let writer = TableWriter(format: TableFormat(format), output: out, options: exportOptions, fields: fields)
            // Live: every row reaches the terminal or the pipe as soon as its response completes.
            writer.flushEachRow = input.interface != nil
            sink = TabularSink(writer: writer, filter: filter)
        }

        // Files: the export stage runs on a second core, beside reading, reassembly and parsing.
        let exportThread = live == nil && !output.connections && availableProcessors() > 1 ? ExportThread(sink: sink) : nil
        defer { exportThread?.finish() }
        let pipeline = Pipeline(sink: exportThread ?? sink, options: pipelineOptions)
        var code = Exit.ok
        var comments: [String] = []
        var analysed = 0
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
            let outcome = pipeline.run(source, maxPackets: input.count) { Signals.stop }
            if outcome != .unsupportedLinkType { analysed += 1 }
            switch outcome {
            case .completed:
                break
            case .interrupted:
                if Signals.stop {
                    let text = "interrupted after \(source.packetsRead) packets of '\(path)': the output holds what was analysed until then"
                    Diagnostics.warning(text)
                    comments.append(text)
                }
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
        if let live {
            code = max(code, live.run(pipeline: pipeline))
        }
        // Not one input could be read: the error lines say why, and no empty table or HAR is
        // written (an empty capture, by contrast, gives a valid empty output).
        if analysed == 0 && live == nil && code != Exit.ok && !input.read.isEmpty { return code }
        pipeline.finish()
        exportThread?.finish()
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
    let filter: TransactionFilter
    init(writer: HARWriter, output: OutputFile, filter: TransactionFilter) { self.writer = writer; self.output = output; self.filter = filter }
    func consume(_ transaction: Transaction) { if filter.matches(transaction) { writer.consume(transaction) } }
    func connectionFinished(_ connection: Connection) { writer.connectionFinished(connection) }
    func finish(comment: String?) throws(OutputError) { writer.write(to: output, comment: comment) }
}

final class TabularSink: ExportSink {
    let writer: TableWriter
    let filter: TransactionFilter
    init(writer: TableWriter, filter: TransactionFilter) { self.writer = writer; self.filter = filter }
    func consume(_ transaction: Transaction) {
        // The cache judgement needs every transaction, also those the filter hides.
        writer.tracker.assess(transaction)
        if filter.matches(transaction) { writer.consume(transaction, assessed: true) }
    }
    func connectionFinished(_ connection: Connection) {}
    func finish(comment: String?) throws(OutputError) { writer.finish() }
}

enum Summary {
    static func print(_ stats: RunStats) {
        var line = "icy-sniff: \(stats.packets) packets, \(stats.connections) TCP connections, \(stats.transactions) HTTP transactions"
        if stats.malformedPackets > 0 { line += ", \(stats.malformedPackets) malformed packets" }
        let notable = stats.weirds.filter { $0.key != .midstreamPickup }.sorted { ($1.value, $0.key.rawValue) < ($0.value, $1.key.rawValue) }.prefix(6)
        if !notable.isEmpty {
            line += "; anomalies: " + notable.map { "\($0.key.rawValue)×\($0.value)" }.joined(separator: ", ")
        }
        Diagnostics.info(line)
    }
}
