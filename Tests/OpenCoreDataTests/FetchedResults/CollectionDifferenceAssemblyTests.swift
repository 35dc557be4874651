import Foundation
@testable import OpenCoreDataCore
import Testing

/// The difference a controller hands its delegate is put together from sorted arrays; it must be
/// the difference the standard library builds from the same changes.
@Suite struct CollectionDifferenceAssemblyTests {
    @Test func theLayoutIsTheOneAssumed() {
        #expect(CollectionDifferenceAssembly.layoutIsKnown)
    }

    @Test func assembledDifferencesEqualTheStandardLibrarysAndApplyAlike() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let count = Int.random(in: 0...40, using: &generator)
            let old = Array(0..<count)
            let removedOffsets = old.indices.filter { _ in Bool.random(using: &generator) }
            var kept = old.enumerated().filter { !removedOffsets.contains($0.offset) }.map(\.element)
            let added = Int.random(in: 0...10, using: &generator)
            for value in 0..<added { kept.insert(1_000 + value, at: Int.random(in: 0...kept.count, using: &generator)) }
            let new = kept
            let removals = removedOffsets.map { CollectionDifference<Int>.Change.remove(offset: $0, element: old[$0], associatedWith: nil) }
            let insertions = new.enumerated().filter { $0.element >= 1_000 }.map {
                CollectionDifference<Int>.Change.insert(offset: $0.offset, element: $0.element, associatedWith: nil)
            }
            let standard = CollectionDifference(insertions.reversed() + removals.reversed())!
            let assembled = CollectionDifferenceAssembly.difference(removals: removals, insertions: insertions)
            #expect(assembled == standard)
            #expect(assembled.insertions == standard.insertions && assembled.removals == standard.removals)
            #expect(Array(assembled) == Array(standard))
            #expect(old.applying(assembled) == new)
        }
    }
}
