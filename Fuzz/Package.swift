// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets for icy-sniff. Build and run with ../scripts/fuzz (see docs/FUZZING.md):
//   swift build -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
let targets = ["FuzzHTTPParser", "FuzzPacketDecode", "FuzzReassembly", "FuzzContentDecoder", "FuzzPipeline", "FuzzTLS", "FuzzHTTP2", "FuzzQUIC"]

let package = Package(
    name: "icy-sniff-fuzz",
    dependencies: [.package(name: "icy-sniff", path: "..")],
    targets: [.target(name: "FuzzSupport", dependencies: [.product(name: "IcySniffCore", package: "icy-sniff")])] + targets.map { name in
        .executableTarget(name: name, dependencies: ["FuzzSupport", .product(name: "IcySniffCore", package: "icy-sniff")],
                          swiftSettings: [.unsafeFlags(["-parse-as-library"])])
    }
)
