/// A live viewer's feed (`--serve`): every transaction, page and connection of a run, encoded
/// once, as it happens, for a consumer that keeps them (the web view's store).
///
/// Input: the `TransactionSink` calls of the pipeline (after the cache judgement and the filter,
/// so the page shows what the files show). Output: `FeedItem`s, in order, to a `FeedConsumer`.
/// The encodings are the outputs' own, so the page and the files never disagree: a transaction's
/// NDJSON row (docs/OUTPUT.md, NDJSON) for the list, and its `TransactionArchive`, from which
/// `FeedEntries` makes its HAR entry when one is asked for (the detail pane, the HAR export, a
/// search): an entry costs ~27,000 instructions to encode, its archive a fraction, and most are
/// never looked at. A page as HAR's `log.pages` item (the HAR writer's page grouping,
/// `PageGrouper`); a connection as HAR's `log._connections` item. Redaction applies as in the
/// files (`ExportOptions`), and bodies are kept only with `includeBodies`.
///
/// The sink never waits for the consumer: `append` must return at once (the web view's store
/// writes to a file and tells its browsers; a slow browser skips, it does not slow the run).
public struct FeedItem {
    public enum Kind: String, Sendable {
        case transaction, page, connection
    }
    public var kind: Kind
    /// A transaction's NDJSON row; a page's or a connection's HAR object. The bytes of an item
    /// are lent for the call to `append` only (the sink's own buffers): a consumer copies what it
    /// keeps, once, where it keeps it.
    public var row: UnsafeBufferPointer<UInt8>
    /// A transaction's `TransactionArchive` (empty for the other kinds): `FeedEntries.entry`
    /// makes its HAR entry.
    public var archive = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
    /// A transaction's start (HAR's order), a page's start, a connection's start.
    public var start: Timestamp
    /// The page a transaction belongs to (`page_3`), or a page's own id.
    public var page: String? = nil
    /// The connection of a transaction, or the connection itself.
    public var connection: UInt64 = 0
    /// A connection that is still open (seen at its TLS or QUIC ServerHello): a later item of the
    /// same connection replaces it.
    public var open = false
    /// With `includeBodies`: the decoded bodies, as kept (up to the body limit).
    public var requestBody: UnsafeBufferPointer<UInt8>? = nil
    public var responseBody: UnsafeBufferPointer<UInt8>? = nil

    public init(kind: Kind, row: UnsafeBufferPointer<UInt8>, archive: UnsafeBufferPointer<UInt8> = UnsafeBufferPointer(start: nil, count: 0),
                start: Timestamp, page: String? = nil, connection: UInt64 = 0, open: Bool = false,
                requestBody: UnsafeBufferPointer<UInt8>? = nil, responseBody: UnsafeBufferPointer<UInt8>? = nil) {
        self.kind = kind
        self.row = row
        self.archive = archive
        self.start = start
        self.page = page
        self.connection = connection
        self.open = open
        self.requestBody = requestBody
        self.responseBody = responseBody
    }
}

/// Where a `FeedSink` puts its items. Called on the thread that feeds the sink (the export
/// thread for files, the pipeline's thread live); must not block.
public protocol FeedConsumer: AnyObject {
    func append(_ item: FeedItem)
}

public final class FeedSink: TransactionSink {
    private let consumer: FeedConsumer
    private let options: ExportOptions
    private var pages = PageGrouper()
    private var pagesSent = 0
    private let json = JSONWriter(indent: 0, capacity: 1 << 12)
    private let archive = ByteBuffer(capacity: 1 << 14)
    /// A transaction's NDJSON row as the run's NDJSON output already wrote it (same options,
    /// same chain before the two), lent until the next transaction; nil: encode it here.
    var sharedRow: ((Transaction) -> UnsafeBufferPointer<UInt8>?)? = nil

    public init(options: ExportOptions, consumer: FeedConsumer) {
        var compact = options
        compact.pretty = false
        self.options = compact
        self.consumer = consumer
    }

    public func consume(_ t: Transaction) {
        let index = pages.page(of: t)
        // A page is announced before its first transaction.
        while pagesSent < pages.pages.count {
            let page = pages.pages[pagesSent]
            json.reset()
            HARWriter.writePage(page, to: json, options: options)
            consumer.append(FeedItem(kind: .page, row: json.buffer, start: page.started, page: page.id))
            pagesSent += 1
        }
        let pageID = pages.pages[index].id
        let row: UnsafeBufferPointer<UInt8>
        if let shared = sharedRow?(t) {
            row = shared
        } else {
            json.reset()
            NDJSONEncoder.write(t, to: json, options: options)
            row = json.buffer
        }
        archive.removeAll()
        TransactionArchive.write(t, to: archive)
        var item = FeedItem(kind: .transaction, row: row, archive: archive.buffer, start: t.startTime, page: pageID,
                            connection: t.connection.id)
        guard options.includeBodies else { return consumer.append(item) }
        Self.lend(t.request?.body.kept) { request in
            Self.lend(t.response?.body.kept) { response in
                item.requestBody = request
                item.responseBody = response
                consumer.append(item)
            }
        }
    }

    private static func lend(_ bytes: [UInt8]?, _ body: (UnsafeBufferPointer<UInt8>?) -> Void) {
        guard let bytes else { return body(nil) }
        bytes.withUnsafeBufferPointer { body($0) }
    }

    /// What makes this feed's HAR entries (its redaction, its bodies).
    public var entries: FeedEntries { FeedEntries(options: options) }

    public func connectionSecured(_ secured: SecuredConnection) { send(secured.summary, open: true) }

    public func connectionFinished(_ connection: Connection) {
        // A connection that carried nothing (a port scan's SYN) is not worth a row.
        guard connection.bytesFromClient > 0 || connection.bytesFromServer > 0 else { return }
        send(ConnectionSummary(connection), open: false)
    }

    private func send(_ summary: ConnectionSummary, open: Bool) {
        json.reset()
        summary.write(to: json, estimates: true)
        consumer.append(FeedItem(kind: .connection, row: json.buffer, start: summary.start,
                                 connection: summary.id, open: open))
    }
}

/// The HAR entries of a feed's transactions, made from their archives on whatever thread asks
/// (the web view's server), with the options of the feed that kept them.
public struct FeedEntries: Sendable {
    let options: ExportOptions

    /// The HAR entry of the transaction `archive` holds, in page `page`, with its kept bodies
    /// (`--bodies`); nil when the bytes are not an archive (a record the disk lost).
    public func entry(archive: UnsafeRawBufferPointer, page: String?, requestBody: [UInt8]?, responseBody: [UInt8]?) -> [UInt8]? {
        guard let t = TransactionArchive.read(archive, requestBody: requestBody, responseBody: responseBody) else { return nil }
        let json = JSONWriter(indent: 0, capacity: 1 << 13)
        EntryEncoder.writeEntry(t, pageref: page, to: json, options: options)
        return json.array
    }

    /// Whether the transaction `archive` holds has a header field `name` (case ignored) in its
    /// response (`response`) or its request: the web view's `has-response-header:` filter.
    public func hasHeader(_ name: String, response: Bool, archive: UnsafeRawBufferPointer) -> Bool {
        guard let t = TransactionArchive.read(archive) else { return false }
        return (response ? t.response : t.request)?.headers.contains(name) ?? false
    }
}

/// Hands every call to two sinks: an output's chain and a second consumer of the same
/// transactions (`--serve`'s feed beside the files).
public final class TeeSink: TransactionSink {
    private let first: TransactionSink
    private let second: TransactionSink
    public init(_ first: TransactionSink, _ second: TransactionSink) { self.first = first; self.second = second }
    public func consume(_ transaction: Transaction) {
        first.consume(transaction)
        second.consume(transaction)
    }
    public func connectionSecured(_ secured: SecuredConnection) {
        first.connectionSecured(secured)
        second.connectionSecured(secured)
    }
    public func connectionFinished(_ connection: Connection) {
        first.connectionFinished(connection)
        second.connectionFinished(connection)
    }
}
