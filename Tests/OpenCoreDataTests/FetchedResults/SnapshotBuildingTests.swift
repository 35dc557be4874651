import Foundation
@testable import OpenCoreDataCore
import Testing

/// Snapshots a controller offers are built when first read: a delegate that does not implement the
/// snapshot method (found out by offering one) costs no object ID per row; one that does gets the
/// rows as they were when the snapshot was made.
@Suite struct SnapshotBuildingTests {
    /// A snapshot of `count` integers in one section, counting how often it is built.
    private func countingSnapshot(_ count: Int, builds: LockedValue<Int>) -> NSDiffableDataSourceSnapshot<String, Int> {
        NSDiffableDataSourceSnapshot {
            builds.withLock { $0 += 1 }
            var contents = SnapshotContents<String, Int>()
            contents.appendSections(["all"])
            contents.appendItems(Array(0..<count), toSection: "all")
            return contents
        }
    }

    @Test func builtOnFirstReadOnly() {
        let builds = LockedValue(0)
        let snapshot = countingSnapshot(1000, builds: builds)
        #expect(builds.withLock { $0 } == 0, "making the snapshot builds nothing")
        #expect(snapshot.numberOfItems == 1000)
        #expect(snapshot.itemIdentifiers(inSection: "all").last == 999)
        #expect(snapshot.sectionIdentifiers == ["all"])
        #expect(builds.withLock { $0 } == 1, "built once, then kept")
    }

    @Test func copiesShareUntilOneChanges() {
        let builds = LockedValue(0)
        let original = countingSnapshot(10, builds: builds)
        var copy = original
        copy.deleteItems([0, 1])
        copy.appendItems([42])
        #expect(builds.withLock { $0 } == 1, "the copy's change built the shared contents once")
        #expect(original.numberOfItems == 10 && original.itemIdentifiers.first == 0, "the original keeps its items")
        #expect(copy.itemIdentifiers == Array(2..<10) + [42])
        #expect(copy.sectionIdentifier(containingItem: 42) == "all")
        #expect(original.sectionIdentifier(containingItem: 42) == nil)
        #expect(builds.withLock { $0 } == 1)
    }

    @Test func firstReadsFromManyThreadsBuildOnce() async {
        let builds = LockedValue(0)
        let snapshot = countingSnapshot(10_000, builds: builds)
        let counts = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 { group.addTask { snapshot.numberOfItems } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(counts == Array(repeating: 10_000, count: 8))
        #expect(builds.withLock { $0 } == 1)
    }
}
