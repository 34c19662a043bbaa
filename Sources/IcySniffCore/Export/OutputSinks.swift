/// The output formats. A new format is one writer (a file of `Export/`) and one case here.
public enum OutputFormat: String, CaseIterable, Sendable {
    case table, tsv, csv, ndjson, har
    /// Each transaction's request and response heads as sent (`-V`, as tshark -V shows a
    /// packet's details): for reading, not for tools.
    case heads
    /// One NDJSON row per WebSocket message (`--websocket-messages`), for tools.
    case websocket

    /// The file name extension of an output of this format (`--out-dir`).
    public var fileExtension: String {
        switch self {
        case .har: return "har"
        case .ndjson, .websocket: return "ndjson"
        case .csv: return "csv"
        case .tsv, .table: return "tsv"
        case .heads: return "txt"
        }
    }
}

/// The end of a sink chain: a writer that also puts its output in place when the run ends.
public protocol OutputSink: TransactionSink {
    func finish(comment: String?) throws(OutputError)
    /// Bytes that `finish` will still write (a HAR's spilled entries): `-C` counts them.
    var pendingBytes: Int { get }
}

extension OutputSink {
    public var pendingBytes: Int { 0 }
}

/// HAR 1.2: the whole document is written at the end (entries are spilled as they come).
public final class HAROutput: OutputSink {
    public let writer: HARWriter
    private let output: OutputFile
    public init(writer: HARWriter, output: OutputFile) { self.writer = writer; self.output = output }
    public func consume(_ transaction: Transaction) { writer.consume(transaction) }
    public func connectionFinished(_ connection: Connection) { writer.connectionFinished(connection) }
    public func finish(comment: String?) throws(OutputError) { writer.write(to: output, comment: comment) }
    public var pendingBytes: Int { writer.pendingBytes }
}

/// No output (`--serve` without `-o`: the page is the output).
public final class NullOutput: OutputSink {
    public init() {}
    public func consume(_ transaction: Transaction) {}
    public func connectionFinished(_ connection: Connection) {}
    public func finish(comment: String?) throws(OutputError) {}
}

/// Table, TSV, CSV and NDJSON: one row as each transaction completes.
public final class TabularOutput: OutputSink {
    public let writer: TableWriter
    /// The rows of encrypted connections that no key opens and of the exchanges estimated from
    /// their records (`TableWriter.writeEncrypted`, `writeInferred`): not when a filter chose
    /// the transactions by what only HTTP shows (an estimate has no method, status or path);
    /// a filter of devices alone keeps those of its devices.
    public var writesEncrypted = true
    public init(writer: TableWriter) { self.writer = writer }
    public func consume(_ transaction: Transaction) { writer.consume(transaction) }
    public func connectionSecured(_ secured: SecuredConnection) {
        guard writesEncrypted, secured.keys == .none else { return }
        writer.writeEncrypted(secured.summary, at: .handshake, captureName: secured.captureName)
    }
    public func connectionFinished(_ connection: Connection) {
        guard writesEncrypted, connection.encryptedWithoutKeys else { return }
        writer.writeInferred(of: connection)
        writer.writeEncrypted(ConnectionSummary(connection), at: .end, captureName: connection.captureName)
    }
    public func finish(comment: String?) throws(OutputError) { writer.finish() }
}

/// Builds the sink chain of one output: the cache judgement first (`CacheJudgingSink`, so every
/// output of a run gives the same verdict, filtered or not), then the filter, then the writer.
public struct SinkFactory {
    public var format: OutputFormat
    public var options = ExportOptions()
    public var fields: [Field] = Field.defaultColumns
    public var filter = TransactionFilter()
    /// Counts what the filter saw and kept (the summary line), when given.
    public var filterTally: FilterTally? = nil
    /// `--connections --fields`: the connection columns to write (TSV, CSV), by name.
    public var connectionFields: [String]? = nil
    /// `--connections`: list connections instead of transactions.
    public var connections = false
    /// Live captures: every row reaches the output as soon as it is written.
    public var flushEachRow = false
    /// The run's device names, for the terminal table's client cell (`TableWriter.deviceNames`).
    public var deviceNames: DeviceDirectory? = nil
    /// False for the parts of a merged batch output after the first.
    public var writesHeader = true

    public init(format: OutputFormat) { self.format = format }

    /// `-G`, `-C`, `-W` (and `SIGHUP`): the output is a series of files named after `pattern`.
    public var rotation: RotationPolicy? = nil

    /// The chain's head (what the pipeline, or the export thread, feeds) and its end (what is
    /// finished when the run ends).
    public func make(writingTo output: OutputFile) -> (head: TransactionSink, output: OutputSink) {
        chain(ending: makeWriter(output))
    }

    /// The chain without a writer (`--serve` alone: the feed is its only consumer).
    public func makeWithoutOutput() -> (head: TransactionSink, output: OutputSink) {
        chain(ending: NullOutput())
    }

    /// The same chain into rotated files named after `pattern`: one writer per file, while the
    /// cache judgement and the filter keep their state from one file to the next.
    public func make(rotating pattern: String) -> (head: TransactionSink, output: RotatingOutput) {
        let format = self.format, connections = self.connections
        let end = RotatingOutput(naming: RotationNaming(pattern: pattern, policy: rotation ?? RotationPolicy()),
                                 connectionOpensFile: { connection in
                                     // A line of --connections; a HAR's TLS connection (its transactions may be encrypted).
                                     connections || (format == .har && connection.tls != nil)
                                 },
                                 makeSink: { output in makeWriter(output) })
        let chain = chain(ending: end)
        return (chain.head, end)
    }

    /// The writer of one file.
    private func makeWriter(_ output: OutputFile) -> OutputSink {
        if connections {
            let writer = ConnectionListWriter(output: output, format: format)
            writer.fields = connectionFields?.compactMap { ConnectionListWriter.columns.firstIndex(of: $0) }
            writer.streaming = flushEachRow
            return writer
        }
        switch format {
        case .har:
            return HAROutput(writer: HARWriter(options: options), output: output)
        case .table, .tsv, .csv, .ndjson, .heads, .websocket:
            let writer = TableWriter(format: TableFormat(format), output: output, options: options, fields: fields)
            writer.flushEachRow = flushEachRow
            writer.writesHeader = writesHeader
            writer.deviceNames = deviceNames
            let tabular = TabularOutput(writer: writer)
            tabular.writesEncrypted = filter.choosesOnlyDevices
            return tabular
        }
    }

    /// `--serve`: the web view's feed, given what the output is given (after the cache judgement
    /// and the filter).
    public var feed: TransactionSink? = nil

    private func chain(ending end: OutputSink) -> (head: TransactionSink, output: OutputSink) {
        let last: TransactionSink = feed.map { TeeSink(end, $0) } ?? end
        // The feed comes after the output in the tee, with the same options: an NDJSON output's
        // row is the feed's row, encoded once.
        if let feed = feed as? FeedSink, let tabular = end as? TabularOutput {
            let writer = tabular.writer
            feed.sharedRow = { [unowned writer] t in writer.row(of: t) }
        }
        // --connections: only the devices the filter names (the other filters are about
        // transactions).
        if connections { return (filter.choosesDevices ? FilteringSink(filter: filter, next: last) : last, end) }
        let filtered: TransactionSink = filter.isEmpty ? last : FilteringSink(filter: filter, next: last, tally: filterTally)
        return (CacheJudgingSink(next: filtered), end)
    }
}

extension TableFormat {
    public init(_ format: OutputFormat) {
        switch format {
        case .table: self = .table
        case .tsv: self = .tsv
        case .csv: self = .csv
        case .heads: self = .heads
        case .websocket: self = .webSocketMessages
        case .ndjson, .har: self = .ndjson
        }
    }
}
