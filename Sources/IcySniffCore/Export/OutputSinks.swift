/// The output formats. A new format is one writer (a file of `Export/`) and one case here.
public enum OutputFormat: String, CaseIterable, Sendable {
    case table, tsv, csv, ndjson, har

    /// The file name extension of an output of this format (`--out-dir`).
    public var fileExtension: String {
        switch self {
        case .har: return "har"
        case .ndjson: return "ndjson"
        case .csv: return "csv"
        case .tsv, .table: return "tsv"
        }
    }
}

/// The end of a sink chain: a writer that also puts its output in place when the run ends.
public protocol OutputSink: TransactionSink {
    func finish(comment: String?) throws(OutputError)
}

/// HAR 1.2: the whole document is written at the end (entries are spilled as they come).
public final class HAROutput: OutputSink {
    public let writer: HARWriter
    private let output: OutputFile
    public init(writer: HARWriter, output: OutputFile) { self.writer = writer; self.output = output }
    public func consume(_ transaction: Transaction) { writer.consume(transaction) }
    public func connectionFinished(_ connection: Connection) { writer.connectionFinished(connection) }
    public func finish(comment: String?) throws(OutputError) { writer.write(to: output, comment: comment) }
}

/// Table, TSV, CSV and NDJSON: one row as each transaction completes.
public final class TabularOutput: OutputSink {
    public let writer: TableWriter
    public init(writer: TableWriter) { self.writer = writer }
    public func consume(_ transaction: Transaction) { writer.consume(transaction) }
    public func connectionFinished(_ connection: Connection) {}
    public func finish(comment: String?) throws(OutputError) { writer.finish() }
}

/// Builds the sink chain of one output: the cache judgement first (`CacheJudgingSink`, so every
/// output of a run gives the same verdict, filtered or not), then the filter, then the writer.
public struct SinkFactory {
    public var format: OutputFormat
    public var options = ExportOptions()
    public var fields: [Field] = Field.defaultColumns
    public var filter = TransactionFilter()
    /// `--connections`: list connections instead of transactions.
    public var connections = false
    /// Live captures: every row reaches the output as soon as it is written.
    public var flushEachRow = false
    /// False for the parts of a merged batch output after the first.
    public var writesHeader = true

    public init(format: OutputFormat) { self.format = format }

    /// The chain's head (what the pipeline, or the export thread, feeds) and its end (what is
    /// finished when the run ends).
    public func make(writingTo output: OutputFile) -> (head: TransactionSink, output: OutputSink) {
        if connections {
            let list = ConnectionListWriter(output: output, format: format)
            return (list, list)
        }
        let end: OutputSink
        switch format {
        case .har:
            end = HAROutput(writer: HARWriter(options: options), output: output)
        case .table, .tsv, .csv, .ndjson:
            let writer = TableWriter(format: TableFormat(format), output: output, options: options, fields: fields)
            writer.flushEachRow = flushEachRow
            writer.writesHeader = writesHeader
            end = TabularOutput(writer: writer)
        }
        let filtered: TransactionSink = filter.isEmpty ? end : FilteringSink(filter: filter, next: end)
        return (CacheJudgingSink(next: filtered), end)
    }
}

extension TableFormat {
    public init(_ format: OutputFormat) {
        switch format {
        case .table: self = .table
        case .tsv: self = .tsv
        case .csv: self = .csv
        case .ndjson, .har: self = .ndjson
        }
    }
}
