import IcySniffCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// A browser's Server-Sent Events stream (`/api/events?after=SEQ`): every record after `after`,
/// in batches (`event: records`), as the run appends them; `event: status` when the analysis
/// ends; a comment every 15 s keeps proxies from closing it. A browser that does not read fast
/// enough (more than `maxBacklog` records behind while the socket is full) skips ahead: the
/// skipped records are counted and said (`event: skipped`), the run is never held up.
///
/// Batches are at least `minInterval` apart: the first records after a quiet moment go at once,
/// those that follow within the interval wait for it and go together. A browser handles each
/// event as a task of its own (parse, ingest, a frame): a burst of 9,000 transactions a second
/// was 1,000 events a second, one per wake-up, and the page, not the server, fell behind.
final class EventStream {
    private let server: WebServer
    private let context: ChannelHandlerContext
    private var cursor: Int
    private var subscription = 0
    private var sentRunning: Bool? = nil
    private var skipped = 0
    private var skipUnsaid = false
    private var keepAlive: RepeatedTask? = nil
    static let maxBacklog = 20_000
    /// At most one batch per frame of a 60 Hz screen.
    static let minInterval = TimeAmount.milliseconds(16)
    private var lastBatch = NIODeadline.distantPast
    private var batchScheduled = false

    init(server: WebServer, context: ChannelHandlerContext, after: Int) {
        self.server = server
        self.context = context
        self.cursor = max(0, after)
    }

    func begin(version: HTTPVersion) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/event-stream; charset=utf-8")
        for (name, value) in WebServer.securityHeaders { headers.add(name: name, value: value) }
        context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: version, status: .ok, headers: headers))), promise: nil)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        subscription = server.store.subscribe { loop.execute { bound.value.wake() } }
        keepAlive = loop.scheduleRepeatedTask(initialDelay: .seconds(15), delay: .seconds(15)) { _ in
            bound.value.send(": keep-alive\n\n")
        }
        pump()
    }

    func end() {
        keepAlive?.cancel()
        keepAlive = nil
        if subscription != 0 { server.store.unsubscribe(subscription) }
        subscription = 0
    }

    /// Text for the stream, written only to a reader that reads (a stream that does not is
    /// written no further: its keep-alive comments waited in memory).
    private func send(_ text: String) {
        guard subscription != 0, context.channel.isWritable else { return }
        var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
    }

    /// New records: sent now, or with the next batch when the last one went less than
    /// `minInterval` ago (the store wakes this stream again only after `pump` acknowledges).
    private func wake() {
        guard !batchScheduled else { return }
        let due = lastBatch + Self.minInterval
        guard NIODeadline.now() < due else { return pump() }
        batchScheduled = true
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(deadline: due) {
            bound.value.batchScheduled = false
            bound.value.pump()
        }
    }

    func pump() {
        guard subscription != 0 else { return }
        let store = server.store
        store.acknowledge(subscription)
        cursor = min(cursor, store.count)
        let channel = context.channel
        if channel.isWritable && skipUnsaid {
            skipUnsaid = false
            send("event: skipped\ndata: {\"skipped\":\(skipped),\"at\":\(cursor)}\n\n")
        }
        var wrote = false
        while channel.isWritable {
            let got = store.records(after: cursor, limit: 2000, maxBytes: RequestGuard.Limits.eventBytes)
            if got.count == 0 { break }
            var buffer = channel.allocator.buffer(capacity: got.json.count + 32)
            buffer.writeString("event: records\ndata: ")
            buffer.writeBytes(got.json)
            buffer.writeString("\n\n")
            context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
            cursor = got.last
            wrote = true
        }
        if !channel.isWritable {
            let behind = store.count - cursor
            if behind > Self.maxBacklog {
                skipped += behind
                cursor += behind
                skipUnsaid = true
            }
        }
        let running = store.isRunning
        if sentRunning != running && channel.isWritable && store.count == cursor {
            sentRunning = running
            var buffer = channel.allocator.buffer(capacity: 64)
            buffer.writeString("event: status\ndata: {\"running\":\(running),\"records\":\(cursor)}\n\n")
            context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
            wrote = true
        }
        if wrote {
            context.flush()
            lastBatch = .now()
        }
    }
}
