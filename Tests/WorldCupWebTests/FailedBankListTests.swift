import Foundation
import Testing
import WorldCupWebKit

/// The Failed Banks list behind the second page: the store written by Apple's Core Data, and
/// synthetic stores.
@Suite("Failed Banks list")
struct FailedBankListTests {
    @Test("The bundled store lists 233 banks by closing date, a range at a time")
    func bundledStore() async throws {
        let list = try FailedBankList(storeURL: try FailedBankList.bundledStoreURL())
        #expect(list.count == 233)
        let all = try await list.rows(in: 0..<233)
        #expect(all.map(\.index) == Array(0..<233))
        #expect(all.first?.name == "Bank of Honolulu")
        #expect(all.first?.closeDate == "2000-10-13")
        let dates = all.map(\.closeDate)
        #expect(!dates.contains(""))
        #expect(dates == dates.sorted())
        // A range across two batches of 20 gives the same rows as the whole list.
        #expect(try await list.rows(in: 15..<45) == Array(all[15..<45]))
        // Ranges are clamped to the list.
        #expect(try await list.rows(in: 230..<300).map(\.index) == [230, 231, 232])
        #expect(try await list.rows(in: 500..<520).isEmpty)
    }

    @Test("Synthetic banks: generated once, reused, regenerated for another count")
    func syntheticStore() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let url = directory.url.appendingPathComponent("synthetic.sqlite")
        var reports: [Int] = []
        try SyntheticBanks.prepareStore(count: 25, at: url) { reports.append($0) }
        #expect(reports == [25])
        let list = try FailedBankList(storeURL: url)
        #expect(list.count == 25)
        let rows = try await list.rows(in: 0..<25)
        #expect(rows.map(\.closeDate) == rows.map(\.closeDate).sorted())
        #expect(Set(rows.map(\.name)).count == 25)

        reports = []
        try SyntheticBanks.prepareStore(count: 25, at: url) { reports.append($0) }
        #expect(reports.isEmpty, "a store with the right count is reused")
        try SyntheticBanks.prepareStore(count: 30, at: url) { reports.append($0) }
        #expect(reports == [30])
        #expect(try FailedBankList(storeURL: url).count == 30)
        #expect(throws: WebRequestError.self) { try SyntheticBanks.prepareStore(count: 0, at: url) }
    }
}
