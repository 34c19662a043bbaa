import Foundation
import Testing

/// Writes classic pcap files of Ethernet/IPv4/TCP packets: hostile captures are generated here,
/// not kept in git.
struct PcapBuilder {
    var bytes: [UInt8] = []
    var time: Double = 1_700_000_000

    init() {
        append32(0xa1b2_c3d4); append16(2); append16(4); append32(0); append32(0); append32(262_144); append32(1)
    }

    mutating func append16(_ v: UInt16) { bytes.append(UInt8(v & 0xff)); bytes.append(UInt8(v >> 8)) }
    mutating func append32(_ v: UInt32) { for i in 0..<4 { bytes.append(UInt8((v >> (8 * UInt32(i))) & 0xff)) } }

    /// One TCP segment from `src:sport` to `dst:dport`.
    mutating func tcp(_ src: UInt32, _ sport: UInt16, _ dst: UInt32, _ dport: UInt16, seq: UInt32, ack: UInt32,
                      flags: UInt8, payload: ArraySlice<UInt8> = [], advance: Double = 0.0001) {
        time += advance
        let total = 40 + payload.count
        let frameLength = 14 + total
        append32(UInt32(time)); append32(UInt32((time - floor(time)) * 1e6)); append32(UInt32(frameLength)); append32(UInt32(frameLength))
        bytes += [UInt8](repeating: 0, count: 12) + [0x08, 0x00]
        bytes += [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 0, 0x40, 0, 64, 6, 0, 0]
        for a in [src, dst] { bytes += [UInt8(a >> 24), UInt8((a >> 16) & 0xff), UInt8((a >> 8) & 0xff), UInt8(a & 0xff)] }
        bytes += [UInt8(sport >> 8), UInt8(sport & 0xff), UInt8(dport >> 8), UInt8(dport & 0xff)]
        for v in [seq, ack] { bytes += [UInt8(v >> 24), UInt8((v >> 16) & 0xff), UInt8((v >> 8) & 0xff), UInt8(v & 0xff)] }
        bytes += [0x50, flags, 0xff, 0xff, 0, 0, 0, 0]
        bytes += payload
    }

    func write(to url: URL) throws { try Data(bytes).write(to: url) }
}

let clientIP: UInt32 = 0x0A00_0002, serverIP: UInt32 = 0x0A00_0001
let SYN: UInt8 = 0x02, ACK: UInt8 = 0x10, PSH_ACK: UInt8 = 0x18, FIN_ACK: UInt8 = 0x11

/// Under AddressSanitizer (`swift test --sanitize=address`) memory figures include the shadow
/// memory and quarantine: the bounds are checked only in ordinary builds.
let underAddressSanitizer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil

extension CLI {
    /// Runs the binary and reports its peak resident memory (MiB) as well.
    static func runMeasured(_ arguments: [String]) throws -> (CLI.Result, Double) {
        let script = """
        import resource, subprocess, sys
        p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        sys.stdout.buffer.write(p.stdout)
        sys.stderr.buffer.write(p.stderr)
        sys.stderr.write("\\nmaxrss_kb=%d\\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        sys.exit(p.returncode)
        """
        let r = try CLI.run(["python3", "-c", script, CLI.binary] + arguments, executable: "/usr/bin/env")
        let kb = r.stderr.split(separator: "\n").last { $0.hasPrefix("maxrss_kb=") }.flatMap { Double($0.dropFirst(10)) } ?? 0
        return (r, kb / 1024)
    }
}

/// Hostile and broken input: icy-sniff finishes, reports what it could, stays within memory bounds.
@Suite(.serialized) struct HostileInputTests {
    @Test(.hangLimit)
    func synFloodOfAMillionConnectionsStaysUnder256MiB() throws {
        var pcap = PcapBuilder()
        pcap.bytes.reserveCapacity(1_000_000 * 70)
        for i in 0..<1_000_000 {
            pcap.tcp(clientIP &+ UInt32(i >> 14), UInt16(1024 + i % 16384), serverIP, 80, seq: UInt32(i), ack: 0, flags: SYN, advance: 0.00001)
        }
        let file = CLI.temporaryDirectory().appendingPathComponent("synflood.pcap")
        try pcap.write(to: file)
        let (r, mib) = try CLI.runMeasured(["-r", file.path, "--format", "tsv"])
        #expect(r.status == 0)
        #expect(r.stderr.contains("1000000 packets, 1000000 TCP connections, 0 HTTP transactions"))
        // Every request waits for its response here: 100,000 open transactions at about 2.6 KB
        // each (252 MiB measured with the debug build, 268 MiB release). The bound is that with
        // room for the allocator's variation; it fails when a transaction grows by a third.
        #expect(underAddressSanitizer || mib < 336, "peak RSS \(mib) MiB")
    }

    /// One connection carrying `requests` pipelined GETs, then their responses.
    func pipelined(_ requests: Int, headerLine: Int = 0) -> PcapBuilder {
        var pcap = PcapBuilder()
        var c: UInt32 = 1000, s: UInt32 = 9000
        pcap.tcp(clientIP, 40000, serverIP, 80, seq: c, ack: 0, flags: SYN); c += 1
        pcap.tcp(serverIP, 80, clientIP, 40000, seq: s, ack: c, flags: SYN | ACK); s += 1
        pcap.tcp(clientIP, 40000, serverIP, 80, seq: c, ack: s, flags: ACK)
        var stream: [UInt8] = []
        let big = headerLine > 0 ? "X-Big: " + String(repeating: "a", count: headerLine) + "\r\n" : ""
        for i in 0..<requests { stream += Array("GET /r/\(i) HTTP/1.1\r\nHost: example.com\r\n\(i == 0 ? big : "")\r\n".utf8) }
        var reply: [UInt8] = []
        for i in 0..<requests { reply += Array("HTTP/1.1 200 OK\r\nContent-Length: \(String(i).count)\r\n\r\n\(i)".utf8) }
        for (from, bytes) in [(0, stream), (1, reply)] {
            var o = 0
            while o < bytes.count {
                let n = min(1448, bytes.count - o)
                if from == 0 {
                    pcap.tcp(clientIP, 40000, serverIP, 80, seq: c, ack: s, flags: PSH_ACK, payload: bytes[o..<(o + n)]); c &+= UInt32(n)
                } else {
                    pcap.tcp(serverIP, 80, clientIP, 40000, seq: s, ack: c, flags: PSH_ACK, payload: bytes[o..<(o + n)]); s &+= UInt32(n)
                }
                o += n
            }
        }
        pcap.tcp(clientIP, 40000, serverIP, 80, seq: c, ack: s, flags: FIN_ACK)
        pcap.tcp(serverIP, 80, clientIP, 40000, seq: s, ack: c + 1, flags: FIN_ACK)
        return pcap
    }

    /// 100,000 pipelined requests, then their 100,000 responses (issue 31): at most 1,000 wait
    /// for their response at once. The 99,000 written early by the cap are flagged, so are their
    /// responses, written on their own in order; the last 1,000 are paired; memory stays small
    /// (before the cap: 268 MiB, and 495 MiB for 300,000 never answered).
    @Test(.hangLimit)
    func hundredThousandPipelinedRequestsOnOneConnection() throws {
        let file = CLI.temporaryDirectory().appendingPathComponent("pipelined.pcap")
        try pipelined(100_000).write(to: file)
        let (r, mib) = try CLI.runMeasured(["-r", file.path, "--format", "tsv", "--fields", "method,path,status,size,flags"])
        #expect(r.status == 0)
        let rows = r.text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        try #require(rows.count == 1 + 99_000 + 99_000 + 1_000, "\(rows.count)")
        let early = rows.filter { $0[0] == "GET" && $0[2].isEmpty }
        let strays = rows.filter { $0[0].isEmpty && $0[2] == "200" }
        let paired = rows.filter { $0[0] == "GET" && $0[2] == "200" }
        #expect(early.count == 99_000 && strays.count == 99_000 && paired.count == 1_000)
        #expect(early.allSatisfy { $0[4].contains("waiting_requests_capped") } && strays.allSatisfy { $0[4].contains("waiting_requests_capped") })
        #expect(early.first?[1] == "/r/0" && early.last?[1] == "/r/98999")
        #expect(paired.first?[1] == "/r/99000" && paired.last == ["GET", "/r/99999", "200", "5", "pipelined_request"])
        // The responses written on their own are the evicted requests', in order: sizes 1, 1, ... 5.
        #expect(strays.first?[3] == "1" && strays.last?[3] == "5")
        #expect(r.stderr.contains("waiting_requests_capped"))
        #expect(underAddressSanitizer || mib < 64, "peak RSS \(mib) MiB")
    }

    /// The shapes of scripts/make-hostile-captures (issue 31) at a third of their size: 33,340
    /// connections each with a request never answered are followed 8,192 at a time (the longest
    /// idle quarter ended early, flagged), every request still written; --max-connections lifts
    /// the cap; 66,680 unanswered h2c streams and 100,019 unanswered pipelined GETs are written
    /// with the waiting cap; the CONTINUATION flood ends. Each under 64 MiB.
    @Test(.hangLimit)
    func generatedHostileShapesStayBounded() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let make = try CLI.run(["python3", CLI.packageRoot.appendingPathComponent("scripts/make-hostile-captures").path, dir.path, "0.3334"],
                               executable: "/usr/bin/env")
        try #require(make.status == 0, "\(make.stderr)")
        func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

        let (many, manyMiB) = try CLI.runMeasured(["-r", path("many-unanswered.pcap"), "--format", "tsv", "--fields", "path,status,flags"])
        #expect(many.status == 0)
        let rows = many.text.split(separator: "\n").dropFirst()
        #expect(rows.count == 33_340 && rows.allSatisfy { $0.contains("request_without_response") })
        #expect(many.stderr.contains("33340 TCP connections, 33340 HTTP transactions") && many.stderr.contains("connection_evicted"), "\(many.stderr)")
        #expect(underAddressSanitizer || manyMiB < 64, "peak RSS \(manyMiB) MiB")
        let lifted = try CLI.run(["-r", path("many-unanswered.pcap"), "--format", "tsv", "--max-connections", "65536", "-o", "/dev/null"])
        #expect(lifted.status == 0 && !lifted.stderr.contains("connection_evicted"), "\(lifted.stderr)")
        let (connections, connectionsMiB) = try CLI.runMeasured(["-r", path("many-unanswered.pcap"), "--connections", "--format", "tsv"])
        #expect(connections.text.split(separator: "\n").count == 33_341)
        #expect(underAddressSanitizer || connectionsMiB < 64, "--connections peak RSS \(connectionsMiB) MiB")

        for (name, transactions) in [("h2c-unanswered.pcap", 66_680), ("pipelined-unanswered.pcap", 100_019)] {
            let (r, mib) = try CLI.runMeasured(["-r", path(name), "--format", "ndjson", "-o", "/dev/null"])
            #expect(r.status == 0 && r.stderr.contains("\(transactions) HTTP transactions") && r.stderr.contains("waiting_requests_capped"), "\(name): \(r.stderr)")
            #expect(underAddressSanitizer || mib < 64, "\(name): peak RSS \(mib) MiB")
        }
        // 666 connections with 300 unanswered requests each: under every per-connection cap, but
        // 199,800 waiting together. The shared state budget ends the longest idle connections;
        // every request is still written (965 MiB at full scale before the budget).
        let (piled, piledMiB) = try CLI.runMeasured(["-r", path("many-pipelined.pcap"), "--format", "ndjson", "-o", "/dev/null"])
        #expect(piled.status == 0 && piled.stderr.contains("199800 HTTP transactions") && piled.stderr.contains("state_budget_exceeded"), "\(piled.stderr)")
        #expect(underAddressSanitizer || piledMiB < 80, "peak RSS \(piledMiB) MiB")

        let flood = try CLI.run(["-r", path("continuation-flood.pcap"), "--format", "ndjson", "-o", "/dev/null"])
        #expect(flood.status == 0 && flood.stderr.contains("1 HTTP transaction"), "\(flood.stderr)")

        // A text/plain body of 5,334,400 NUL bytes: base64 in the HAR (as JSON text each NUL
        // would be six bytes), whole.
        let har = dir.appendingPathComponent("nul.har")
        let (nul, nulMiB) = try CLI.runMeasured(["-r", path("nul-body.pcap"), "--har", "--bodies", "--compact", "-o", har.path])
        #expect(nul.status == 0)
        let log = try #require((try JSONSerialization.jsonObject(with: Data(contentsOf: har)) as? [String: Any])?["log"] as? [String: Any])
        let content = try #require(((log["entries"] as? [[String: Any]])?.first?["response"] as? [String: Any])?["content"] as? [String: Any])
        #expect(content["encoding"] as? String == "base64")
        let decoded = Data(base64Encoded: content["text"] as? String ?? "") ?? Data()
        #expect(decoded.count == 5_334_400 && decoded.allSatisfy { $0 == 0 })
        #expect(underAddressSanitizer || nulMiB < 64, "peak RSS \(nulMiB) MiB")
    }

    /// A 2 GiB response body (past 2^31, in 65,000-byte segments) streamed through `-r -` from a
    /// generator: nothing is written to disk, sizes are counted as the body passes, and with
    /// `--bodies` the kept copy stops at the documented 16 MiB cap (flagged) while the sizes stay exact.
    @Test(.hangLimit)
    func twoGibibyteBodyIsCountedByStreaming() throws {
        let generator = #"""
        import struct, sys
        out = sys.stdout.buffer
        out.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
        t = [1700000000.0]
        def tcp(src, sport, dst, dport, seq, ack, flags, payload=b''):
            t[0] += 0.0001
            total = 40 + len(payload)
            sec = int(t[0]); usec = int((t[0] - sec) * 1e6)
            frame = 14 + total
            out.write(struct.pack('<IIII', sec, usec, frame, frame))
            out.write(bytes(12) + b'\x08\x00')
            out.write(struct.pack('!BBHHHBBH4s4s', 0x45, 0, total, 0, 0x4000, 64, 6, 0, src, dst))
            out.write(struct.pack('!HHIIBBHHH', sport, dport, seq & 0xffffffff, ack & 0xffffffff, 0x50, flags, 65535, 0, 0))
            out.write(payload)
        C, S = bytes([10, 0, 0, 2]), bytes([10, 0, 0, 1])
        size = 2 ** 31
        c, s = 1000, 9000
        tcp(C, 40000, S, 80, c, 0, 0x02); c += 1
        tcp(S, 80, C, 40000, s, c, 0x12); s += 1
        tcp(C, 40000, S, 80, c, s, 0x10)
        req = b'GET /big.bin HTTP/1.1\r\nHost: example.com\r\n\r\n'
        tcp(C, 40000, S, 80, c, s, 0x18, req); c += len(req)
        head = b'HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n' % size
        tcp(S, 80, C, 40000, s, c, 0x18, head); s += len(head)
        block = b'x' * 65000
        left = size
        while left > 0:
            n = min(left, len(block))
            tcp(S, 80, C, 40000, s, c, 0x18, block[:n]); s += n; left -= n
        tcp(C, 40000, S, 80, c, s, 0x11)
        tcp(S, 80, C, 40000, s, c + 1, 0x11)
        """#
        let dir = CLI.temporaryDirectory()
        let script = dir.appendingPathComponent("gen.py")
        try generator.write(to: script, atomically: true, encoding: .utf8)
        let runner = """
        import resource, subprocess, sys
        gen = subprocess.Popen(['python3', sys.argv[1]], stdout=subprocess.PIPE)
        p = subprocess.run([sys.argv[2], '-r', '-'] + sys.argv[3:], stdin=gen.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        gen.stdout.close(); gen.wait()
        sys.stdout.buffer.write(p.stdout)
        sys.stderr.buffer.write(p.stderr)
        sys.stderr.write("\\nmaxrss_kb=%d\\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        sys.exit(p.returncode)
        """
        func run(_ arguments: [String]) throws -> (CLI.Result, Double) {
            let r = try CLI.run(["python3", "-c", runner, script.path, CLI.binary] + arguments, executable: "/usr/bin/env")
            let kb = r.stderr.split(separator: "\n").last { $0.hasPrefix("maxrss_kb=") }.flatMap { Double($0.dropFirst(10)) } ?? 0
            return (r, kb / 1024)
        }
        let size = 1 << 31
        let (r, mib) = try run(["--format", "ndjson", "--quiet"])
        #expect(r.status == 0, "\(r.stderr.suffix(500))")
        let row = try #require(try JSONSerialization.jsonObject(with: Data(r.text.utf8)) as? [String: Any])
        #expect(row["response_body_len"] as? Int == size)
        #expect(row["response_encoded_len"] as? Int == size)
        #expect(row["flags"] as? [String] == [])
        #expect(underAddressSanitizer || mib < 64, "peak RSS \(mib) MiB")

        let (h, hmib) = try run(["--har", "--bodies", "--quiet"])
        #expect(h.status == 0, "\(h.stderr.suffix(500))")
        let har = try #require(try JSONSerialization.jsonObject(with: Data(h.text.utf8)) as? [String: Any])
        let entry = try #require(((har["log"] as? [String: Any])?["entries"] as? [[String: Any]])?.first)
        let response = try #require(entry["response"] as? [String: Any])
        let content = try #require(response["content"] as? [String: Any])
        #expect(content["size"] as? Int == size)
        #expect(response["bodySize"] as? Int == size)
        let kept = (content["text"] as? String)?.utf8.count ?? 0
        #expect(kept > 0 && kept <= (16 << 20) / 3 * 4 + 64, "kept \(kept) bytes (base64 of at most 16 MiB)")
        #expect((entry["_flags"] as? [String])?.contains("body_truncated_in_memory") == true, "\(entry["_flags"] ?? "none")")
        #expect(underAddressSanitizer || hmib < 16 * 4 + 64, "peak RSS \(hmib) MiB with --bodies")
    }

    /// With `--bodies`, transactions carry their bodies to the export thread: the hand-over is
    /// bounded in bytes as well as in transactions, so 48 responses of 2 MiB (96 MiB of bodies)
    /// never sit in the queue together.
    @Test(.hangLimit)
    func keptBodiesOnTheirWayToTheExportThreadStayBounded() throws {
        var pcap = PcapBuilder()
        var c: UInt32 = 1000, s: UInt32 = 9000
        pcap.tcp(clientIP, 40000, serverIP, 80, seq: c, ack: 0, flags: SYN); c += 1
        pcap.tcp(serverIP, 80, clientIP, 40000, seq: s, ack: c, flags: SYN | ACK); s += 1
        pcap.tcp(clientIP, 40000, serverIP, 80, seq: c, ack: s, flags: ACK)
        let size = 2 << 20
        let block = [UInt8](repeating: 0x61, count: 60_000)
        pcap.bytes.reserveCapacity(48 * (size + 4000))
        for i in 0..<48 {
            let request = Array("GET /big/\(i) HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8)
            pcap.tcp(clientIP, 40000, serverIP, 80, seq: c, ack: s, flags: PSH_ACK, payload: request[...]); c &+= UInt32(request.count)
            let head = Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(size)\r\n\r\n".utf8)
            pcap.tcp(serverIP, 80, clientIP, 40000, seq: s, ack: c, flags: PSH_ACK, payload: head[...]); s &+= UInt32(head.count)
            var left = size
            while left > 0 {
                let n = min(left, block.count)
                pcap.tcp(serverIP, 80, clientIP, 40000, seq: s, ack: c, flags: PSH_ACK, payload: block[0..<n]); s &+= UInt32(n)
                left -= n
            }
        }
        let file = CLI.temporaryDirectory().appendingPathComponent("bodies.pcap")
        try pcap.write(to: file)
        let out = CLI.temporaryDirectory().appendingPathComponent("bodies.har")
        let (r, mib) = try CLI.runMeasured(["-r", file.path, "--har", "--bodies", "--compact", "-o", out.path, "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        let har = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out)) as? [String: Any])
        let entries = try #require((har["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        #expect(entries.count == 48)
        let texts = entries.compactMap { (($0["response"] as? [String: Any])?["content"] as? [String: Any])?["text"] as? String }
        #expect(texts.count == 48 && texts.allSatisfy { $0.utf8.count == size }, "every body kept whole")
        #expect(underAddressSanitizer || mib < 80, "peak RSS \(mib) MiB")
    }

    @Test func oneMebibyteHeaderLineIsFlaggedAndTheExchangeStillPaired() throws {
        let file = CLI.temporaryDirectory().appendingPathComponent("bigheader.pcap")
        try pipelined(3, headerLine: 1 << 20).write(to: file)
        let r = try CLI.run(["-r", file.path, "--format", "ndjson", "--quiet"])
        #expect(r.status == 0)
        let lines = r.text.split(separator: "\n").map { try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        try #require(lines.count >= 3)
        #expect((lines[0]["flags"] as! [String]).contains("header_too_large"))
        #expect(lines.last?["target"] as? String == "/r/2")
        #expect(lines.last?["status"] as? Int == 200)
    }

    @Test(.hangLimit)
    func hundredThousandOutOfOrderSegmentsInOneFlow() throws {
        // A 1 MB response body in 100,000 segments of 10 bytes, sent last-first.
        var pcap = PcapBuilder()
        var c: UInt32 = 1000, s: UInt32 = 0xFFFF_F000   // near the sequence-number wrap
        pcap.tcp(clientIP, 40001, serverIP, 80, seq: c, ack: 0, flags: SYN); c += 1
        pcap.tcp(serverIP, 80, clientIP, 40001, seq: s, ack: c, flags: SYN | ACK); s &+= 1
        let request = Array("GET /big HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        pcap.tcp(clientIP, 40001, serverIP, 80, seq: c, ack: s, flags: PSH_ACK, payload: request[...]); c += UInt32(request.count)
        let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n".utf8)
        let body = (0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let all = head + body
        var segments: [Int] = []
        var o = head.count
        while o < all.count { segments.append(o); o += 10 }
        pcap.tcp(serverIP, 80, clientIP, 40001, seq: s, ack: c, flags: PSH_ACK, payload: all[0..<head.count])
        for start in segments.reversed() {
            pcap.tcp(serverIP, 80, clientIP, 40001, seq: s &+ UInt32(start), ack: c, flags: ACK, payload: all[start..<min(all.count, start + 10)], advance: 0.000001)
        }
        pcap.tcp(serverIP, 80, clientIP, 40001, seq: s &+ UInt32(all.count), ack: c, flags: FIN_ACK)
        let file = CLI.temporaryDirectory().appendingPathComponent("reversed.pcap")
        try pcap.write(to: file)
        let r = try CLI.run(["-r", file.path, "--format", "ndjson", "--quiet"])
        #expect(r.status == 0)
        let first = try #require(r.text.split(separator: "\n").first, "one transaction")
        let o1 = try JSONSerialization.jsonObject(with: Data(first.utf8)) as! [String: Any]
        #expect(o1["response_body_len"] as? Int == 1_000_000)
        #expect((o1["flags"] as! [String]).filter { $0 != "midstream_pickup" }.isEmpty, "\(o1["flags"]!)")
    }

    @Test func lyingRecordLengthsAndUnknownPcapngBlocks() throws {
        let dir = CLI.temporaryDirectory()
        // A record whose captured length claims more than the snapshot length allows.
        var lying = PcapBuilder()
        lying.tcp(clientIP, 1, serverIP, 80, seq: 1, ack: 0, flags: SYN)
        let headerAt = lying.bytes.count
        lying.tcp(clientIP, 1, serverIP, 80, seq: 2, ack: 0, flags: ACK, payload: Array("GET / HTTP/1.1\r\n\r\n".utf8)[...])
        lying.bytes[headerAt + 8] = 0xff; lying.bytes[headerAt + 9] = 0xff; lying.bytes[headerAt + 10] = 0xff; lying.bytes[headerAt + 11] = 0x7f
        try lying.write(to: dir.appendingPathComponent("lying.pcap"))
        let r = try CLI.run(["-r", dir.appendingPathComponent("lying.pcap").path, "--format", "tsv"])
        #expect(r.status == 0, "a damaged capture is a warning")
        #expect(r.stderr.contains("warning"), "\(r.stderr)")
        // pcapng with an unknown block type between the interface and the packets: skipped.
        var ng: [UInt8] = []
        func block(_ type: UInt32, _ body: [UInt8]) {
            let length = UInt32(12 + body.count)
            for v in [type, length] { for i in 0..<4 { ng.append(UInt8((v >> (8 * UInt32(i))) & 0xff)) } }
            ng += body
            for i in 0..<4 { ng.append(UInt8((length >> (8 * UInt32(i))) & 0xff)) }
        }
        block(0x0A0D_0D0A, [0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0] + [UInt8](repeating: 0xff, count: 8))
        block(1, [1, 0, 0, 0, 0, 0, 4, 0])
        block(0x0BAD_0001, [1, 2, 3, 4])
        try Data(ng).write(to: dir.appendingPathComponent("unknown-block.pcapng"))
        let n = try CLI.run(["-r", dir.appendingPathComponent("unknown-block.pcapng").path, "--format", "tsv"])
        #expect(n.status == 0, "\(n.stderr)")
    }
}

@Suite struct InterruptTests {
    /// `requests` pipelined HTTP transactions, then 600,000 SYNs: long enough that a signal
    /// one second in (debug binary) lands mid-read.
    static func longCapture(requests: Int) -> PcapBuilder {
        var pcap = HostileInputTests().pipelined(requests)
        for i in 0..<600_000 {
            pcap.tcp(clientIP &+ UInt32(i >> 14), UInt16(1024 + i % 16384), serverIP, 81, seq: UInt32(i), ack: 0, flags: SYN, advance: 0.00001)
        }
        return pcap
    }

    /// The capture comes through a FIFO whose writer stays after its last byte: the signal, not
    /// the end of the input, ends the run, however fast the machine.
    @Test(.hangLimit)
    func sigintDuringALongReadWritesWhatWasAnalysed() throws {
        let pcap = HostileInputTests().pipelined(50)
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let capture = dir.appendingPathComponent("long.pcap"), har = dir.appendingPathComponent("out.har")
        let fifo = dir.appendingPathComponent("feed.pcap")
        try pcap.write(to: capture)
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let script = """
        { cat "$1"; sleep 60; } 2>/dev/null > "$2" & w=$!
        "$0" -r "$2" --har -o "$3" & p=$!; sleep 1; kill -INT $p; wait $p; echo "exit $?"
        kill -0 $w 2>/dev/null && echo "writer still there"; pkill -P $w; kill $w
        """
        let r = try CLI.run(["-c", script, CLI.binary, capture.path, fifo.path, har.path], executable: "/bin/bash")
        #expect(r.text.contains("exit 130"), "\(r.text) \(r.stderr)")
        #expect(r.text.contains("writer still there"), "\(r.text)")
        #expect(r.stderr.contains("interrupted after"), "\(r.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: har)) as! [String: Any]
        let log = json["log"] as! [String: Any]
        #expect((log["entries"] as! [Any]).count == 50)
        #expect((log["comment"] as? String)?.contains("interrupted") == true)
    }

    /// A second SIGINT while the output is being completed (issue 31, item 13): the process
    /// stops at once, removes the temporary file it was writing (none is left behind), says so,
    /// and leaves an earlier file of that name as it was. When the output was complete before
    /// the second signal came, it is a whole HAR that says it was interrupted.
    @Test(.hangLimit)
    func aSecondSignalLeavesNoHalfFile() throws {
        let pcap = Self.longCapture(requests: 100_000)
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let capture = dir.appendingPathComponent("long.pcap"), har = dir.appendingPathComponent("out.har")
        try pcap.write(to: capture)
        try Data("previous".utf8).write(to: har)
        let script = "\"$0\" -r \"$1\" --har --bodies -o \"$2\" & p=$!; sleep 1.5; kill -INT $p; sleep 0.2; kill -INT $p; wait $p; echo \"exit $?\""
        let r = try CLI.run(["-c", script, CLI.binary, capture.path, har.path], executable: "/bin/bash")
        #expect(r.text.contains("exit 130"), "\(r.text) \(r.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(left == ["long.pcap", "out.har"], "no temporary file is left: \(left)")
        let text = try String(contentsOf: har, encoding: .utf8)
        if r.stderr.contains("stopped at once by a second signal") {
            #expect(text == "previous", "the earlier file stays as it was")
            #expect(r.stderr.contains("not completed and are removed"))
        } else {
            #expect(text.contains("interrupted"), "complete before the second signal: a whole HAR that says so")
        }
    }

    /// The temporary file of an earlier run that was killed (SIGKILL, a crash) beside the output
    /// is named in a warning, not silently left (issue 31, item 13), and not removed.
    @Test func aStaleTemporaryFileOfAKilledRunIsNamed() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let stale = dir.appendingPathComponent(".out.har.Xy12Zw")
        try Data("{\"log\":".utf8).write(to: stale)
        let r = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "--har", "-o", dir.appendingPathComponent("out.har").path])
        #expect(r.status == 0)
        #expect(r.stderr.contains("'\(stale.path)' is the temporary file of an earlier run that was killed"), "\(r.stderr)")
        #expect(FileManager.default.fileExists(atPath: stale.path))
        let other = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "--har", "-o", dir.appendingPathComponent("other.har").path])
        #expect(!other.stderr.contains("temporary file"), "another output's name is not this one's")
    }

    /// A batch into --out-dir: nothing starts after the signal, the interrupted capture gets no
    /// file (a half HAR would look up to date), the next run analyses every one; and the report
    /// says it was interrupted. The first capture (-j 1) comes through a FIFO whose writer stays
    /// after its last byte: the stop cannot come from the capture ending, however fast the
    /// machine, and the writer still being there after the run shows the signal ended it (a
    /// job waiting on the FIFO, its bytes all read, is woken, not left until its writer goes).
    @Test(.hangLimit)
    func sigintDuringABatchWritesNoHalfFiles() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let archive = dir.appendingPathComponent("archive"), out = dir.appendingPathComponent("out")
        let feed = dir.appendingPathComponent("feed")
        for folder in [archive, feed] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        let capture = archive.appendingPathComponent("a.pcap"), fifo = feed.appendingPathComponent("a.pcap")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        for name in ["a", "b", "c"] {
            try FileManager.default.copyItem(atPath: CLI.capture("wikipedia.pcap"), toPath: archive.appendingPathComponent("\(name).pcap").path)
        }
        // $0 icy-sniff, $1 the capture, $2 the FIFO, then its arguments. The writer's sleep is
        // its child: both are ended after the check.
        let signalled = """
        { cat "$1"; sleep 60; } 2>/dev/null > "$2" & w=$!
        f="$2"; b="$0"; shift 2; "$b" "$@" & p=$!; sleep 1; kill -INT $p; wait $p; echo "exit $?"
        kill -0 $w 2>/dev/null && echo "writer still there"; pkill -P $w; kill $w
        """
        let b = try CLI.run(["-c", signalled, CLI.binary, capture.path, fifo.path, "-r", fifo.path,
                             "-r", archive.appendingPathComponent("b.pcap").path, "-r", archive.appendingPathComponent("c.pcap").path,
                             "--out-dir", out.path, "--har", "-j", "1"], executable: "/bin/bash")
        #expect(b.text.contains("exit 130"), "\(b.text) \(b.stderr)")
        #expect(b.text.contains("writer still there"), "the signal, not the FIFO's end, stopped the batch: \(b.text)")
        #expect(b.stderr.contains("2 of 3 captures were not started"), "\(b.stderr)")
        let written = (try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? []
        #expect(written.filter { $0.hasSuffix(".har") }.isEmpty, "\(written)")
        let rerun = try CLI.run(["-r", archive.path, "--out-dir", out.path, "--har", "-j", "2"])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasSuffix(".har") }.count == 3)

        let rp = try CLI.run(["-c", signalled, CLI.binary, capture.path, fifo.path, "report", "-r", fifo.path], executable: "/bin/bash")
        #expect(rp.text.contains("exit 130"), "\(rp.text) \(rp.stderr)")
        #expect(rp.text.contains("writer still there"), "\(rp.text)")
        #expect(rp.stderr.contains("interrupted"), "\(rp.stderr)")
    }

    /// `-r FIFO` with no writer, and an idle pipe on standard input, stop at SIGINT (no restart
    /// of the waiting open or read); a directory walk does not open FIFOs at all, and says so.
    @Test(.hangLimit)
    func fifosAndIdlePipesStopPromptly() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("f.pcap").path
        let script = """
        mkfifo "$1"
        "$0" -r "$1" > /dev/null 2>&1 & p=$!; sleep 1; kill -INT $p; sleep 1
        if kill -0 $p 2>/dev/null; then echo "fifo still running"; kill -9 $p; else wait $p; echo "fifo exit $?"; fi
        (sleep 8 | "$0" -r - > /dev/null 2>&1; echo "stdin exit $?") & sleep 1; pkill -INT -f "^$0 -r -$"; sleep 1
        pgrep -f "^$0 -r -$" > /dev/null && echo "stdin still running"; wait
        cp "$2" "$(dirname "$1")/w.pcap"
        timeout 20 "$0" -r "$(dirname "$1")" --format tsv > /dev/null; echo "walk exit $?"
        """
        let r = try CLI.run(["-c", script, CLI.binary, fifo, CLI.capture("wikipedia.pcap")], executable: "/bin/bash")
        #expect(r.text.contains("fifo exit 130"), "\(r.text) \(r.stderr)")
        #expect(r.text.contains("stdin exit 130"), "\(r.text) \(r.stderr)")
        #expect(!r.text.contains("stdin still running"), "a signal before the first bytes ends the wait for them")
        #expect(r.text.contains("walk exit 0"), "\(r.text) \(r.stderr)")
        // The FIFO the walk does not open is named, not skipped without a word (issue 31).
        #expect(r.stderr.contains("'\(fifo)' is a FIFO, not read in a directory"), "\(r.stderr)")
    }

    /// `| head`: the reader goes away; icy-sniff ends at once, quietly, with 0.
    @Test func aClosedOutputPipeEndsQuietly() throws {
        let script = "\"$0\" -r \"$1\" --format tsv 2>\"$2\" | head -1 > /dev/null; echo \"exit ${PIPESTATUS[0]}\"; cat \"$2\""
        let err = CLI.temporaryDirectory().appendingPathComponent("err").path
        // Enough rows to outlast head's first read.
        let pcap = HostileInputTests().pipelined(5000)
        let capture = CLI.temporaryDirectory().appendingPathComponent("many.pcap")
        try pcap.write(to: capture)
        let r = try CLI.run(["-c", script, CLI.binary, capture.path, err], executable: "/bin/bash")
        #expect(r.text.hasPrefix("exit 0\n"), "\(r.text)")
        #expect(r.text == "exit 0\n", "stderr should be empty: \(r.text)")
    }
}
