// swift-tools-version:6.1
import PackageDescription

// Stage micro-benchmarks (ordo-one/benchmark): decode, reassembly, HTTP parser, JSON writer, with
// wall time, throughput and malloc counts. A package of its own so the main build and CI do not
// build the benchmark framework. Run: cd Benchmarks && swift package benchmark
let package = Package(
    name: "icy-sniff-benchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.0", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "IcyStages",
            dependencies: [
                .product(name: "IcySniffCore", package: "main"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/IcyStages",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
