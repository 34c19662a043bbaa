import IcySniffCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// One browser connection: requests in, responses out; `/api/events` turns it into a stream.
///
/// A request is judged on its head (RequestGuard): a refused one is answered at once and the
/// connection closed without reading its body; a body is kept only for the route that takes one,
/// within its cap and the server's budget for bodies in flight; a request must arrive whole within
/// `Limits.requestSeconds`, and an idle connection is closed after as long.
final class WebHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let server: WebServer
    /// The request being read: its head, path and query; nil between requests, and once a
    /// refused request's answer is on its way (its body is then dropped, the connection closes).
    private var current: (head: HTTPRequestHead, path: String, query: RequestGuard.Parameters)? = nil
    private var refused = false
    private var body: [UInt8] = []
    /// The request's deadline, or the idle connection's.
    private var deadline: Scheduled<Void>? = nil
    /// The event stream, once this connection is one.
    private var stream: EventStream? = nil

    init(server: WebServer) { self.server = server }

    func handlerAdded(context: ChannelHandlerContext) { arm(context) }

    /// Closes the connection unless a request completes (or, idle, begins) in time.
    private func arm(_ context: ChannelHandlerContext) {
        deadline?.cancel()
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: .seconds(RequestGuard.Limits.requestSeconds)) { channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            guard stream == nil, !refused else { return }
            let uri = h.uri
            let pathEnd = uri.firstIndex(of: "?") ?? uri.endIndex
            let query = RequestGuard.Parameters(query: pathEnd < uri.endIndex ? uri[uri.index(after: pathEnd)...] : "")
            let path = String(uri[..<pathEnd])
            current = (h, path, query)
            release()
            arm(context)
            if let answer = server.refusal(method: h.method, path: path, query: query, headers: h.headers,
                                           port: context.channel.localAddress?.port ?? server.configuration.port) {
                return refuse(answer, head: h, context: context)
            }
            if h.method != .GET && h.method != .HEAD && !WebServer.takesBody(h.method, path) {
                return refuse(.error(.methodNotAllowed, "\(h.method) is not served here"), head: h, context: context)
            }
            let length = h.headers.first(name: "content-length").flatMap { Int($0) }
            if !WebServer.takesBody(h.method, path), (length ?? 0) > 0 || h.headers.contains(name: "transfer-encoding") {
                return refuse(.error(.payloadTooLarge, "\(path) takes no request body"), head: h, context: context)
            }
            if let length, length > RequestGuard.Limits.exportBody {
                return refuse(.error(.payloadTooLarge, "at most \(RequestGuard.Limits.exportBody >> 20) MiB of seqs"), head: h, context: context)
            }
        case .body(var buffer):
            guard let c = current, !refused else { return }
            let n = buffer.readableBytes
            if body.count + n > RequestGuard.Limits.exportBody {
                return refuse(.error(.payloadTooLarge, "at most \(RequestGuard.Limits.exportBody >> 20) MiB of seqs"), head: c.head, context: context)
            }
            guard server.bodiesInFlight.take(n) else {
                return refuse(.error(.serviceUnavailable, "too many uploads at once (\(RequestGuard.Limits.bodiesInFlight >> 20) MiB in flight): try again"),
                              head: c.head, context: context)
            }
            if let bytes = buffer.readBytes(length: n) { body += bytes }
        case .end:
            guard let c = current, !refused else { return }
            current = nil
            deadline?.cancel()
            deadline = nil
            handle(c.head, path: c.path, query: c.query, context: context)
            release()
        }
    }

    /// Gives the body's bytes back to the server's budget.
    private func release() {
        guard !body.isEmpty else { return }
        let n = body.count
        server.bodiesInFlight.give(n)
        body = []
    }

    /// Answers a request that is not read on, and closes the connection once the answer is out.
    private func refuse(_ answer: WebServer.Response, head h: HTTPRequestHead, context: ChannelHandlerContext) {
        refused = true
        current = nil
        release()
        var closing = h
        closing.headers.replaceOrAdd(name: "connection", value: "close")
        respond(answer, head: closing, context: context)
    }

    private func handle(_ h: HTTPRequestHead, path: String, query: RequestGuard.Parameters, context: ChannelHandlerContext) {
        let request = WebServer.Request(method: h.method, path: path, query: query, headers: h.headers, body: body)
        if path == "/api/events" {
            let after: Int
            do { after = try query.number("after", default: 0, in: WebServer.seqRange) } catch {
                return respond(.error(.badRequest, error.message), head: h, context: context)
            }
            guard server.openStreams.take() else {
                return respond(.error(.serviceUnavailable, "\(RequestGuard.Limits.eventStreams) event streams are open already"), head: h, context: context)
            }
            let s = EventStream(server: server, context: context, after: after)
            stream = s
            s.begin(version: h.version)
            return
        }
        let routed: WebServer.Response?
        do { routed = try server.route(request) } catch {
            return respond(.error(.badRequest, error.message), head: h, context: context)
        }
        if let response = routed { return respond(response, head: h, context: context) }
        // Searches and exports: on the pool, answered on this connection's loop.
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let server = self.server
        server.pool.runIfActive(eventLoop: context.eventLoop) { server.slowRoute(request) }.whenComplete { result in
            let (handler, context) = bound.value
            switch result {
            case .success(let response): handler.respond(response, head: h, context: context)
            case .failure: handler.respond(.error(.serviceUnavailable, "the server is stopping"), head: h, context: context)
            }
        }
    }

    func respond(_ r: WebServer.Response, head h: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: r.type)
        headers.add(name: "Content-Length", value: String(r.body.count))
        for (name, value) in WebServer.securityHeaders where !r.extra.contains(where: { $0.0 == name }) { headers.add(name: name, value: value) }
        for (name, value) in r.extra { headers.add(name: name, value: value) }
        if !h.isKeepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: h.version, status: r.status, headers: headers))), promise: nil)
        if h.method != .HEAD {
            var buffer = context.channel.allocator.buffer(capacity: r.body.count)
            buffer.writeBytes(r.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let keepAlive = h.isKeepAlive
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { [channel = context.channel] _ in
            if !keepAlive { channel.close(promise: nil) } else { let (handler, context) = bound.value; if handler.current == nil { handler.arm(context) } }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { stream?.pump() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        release()
        if let s = stream {
            s.end()
            server.openStreams.give()
        }
        stream = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
