import Foundation
import OpenCoreData

/// Makes a Failed Banks store of synthetic banks, to show that the page's first screen does not
/// depend on the size of the list.
///
/// Each bank is a FailedBankInfo with its FailedBankDetails; the values are computed from the
/// bank's number, so the same count gives the same banks. `NSBatchInsertRequest` can't set
/// relationships (as on Apple platforms), so the pairs are inserted through a private-queue context,
/// saved and reset every 10,000 banks.
public enum SyntheticBanks {
    /// Banks per save.
    static let chunkSize = 10_000
    private static let cities: [(String, String)] = [
        ("Springfield", "IL"), ("Riverside", "CA"), ("Franklin", "TN"), ("Greenville", "SC"), ("Bristol", "CT"),
        ("Clinton", "IA"), ("Fairview", "OR"), ("Salem", "MA"), ("Madison", "WI"), ("Georgetown", "TX"),
        ("Arlington", "VA"), ("Ashland", "KY"), ("Dover", "DE"), ("Milton", "GA"), ("Newport", "RI"),
    ]
    private static let words = ["First", "Community", "Citizens", "Heritage", "Pioneer", "Summit", "Valley", "Harbor", "Prairie", "Liberty"]

    /// The default file for `count` synthetic banks, next to the World Cup store.
    public static func defaultStoreURL(count: Int) -> URL {
        NSPersistentContainer.defaultDirectoryURL().appendingPathComponent("FailedBanks-synthetic-\(count).sqlite")
    }

    /// Makes sure the store at `url` holds exactly `count` synthetic banks, generating them (into a
    /// new file) when it does not. `progress` receives the number of banks written so far.
    public static func prepareStore(count: Int, at url: URL, progress: (Int) -> Void = { _ in }) throws {
        guard count > 0 else { throw WebRequestError.badRequest("The number of synthetic banks must be positive.") }
        if FileManager.default.fileExists(atPath: url.path) {
            let existing = try FailedBankList.container(storeURL: url, readOnly: true)
            let context = existing.newBackgroundContext()
            let found = try context.performAndWait { try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")) }
            if found == count { return }
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
        }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let container = try FailedBankList.container(storeURL: url, readOnly: false)
        let context = container.newBackgroundContext()
        let firstDay = Date(timeIntervalSinceReferenceDate: 0) // 2001-01-01
        var written = 0
        try context.performAndWait {
            while written < count {
                for number in written..<min(written + chunkSize, count) {
                    // Banks closed on the same day (numbers 9,000 apart) differ in city and name.
                    let (city, state) = cities[(number + number / 9_000) % cities.count]
                    let info = NSEntityDescription.insertNewObject(forEntityName: "FailedBankInfo", into: context)
                    info.setValue("\(words[(number + 3 * (number / 9_000)) % words.count]) Bank of \(city) #\(number + 1)", forKey: "name")
                    info.setValue(city, forKey: "city")
                    info.setValue(state, forKey: "state")
                    let details = NSEntityDescription.insertNewObject(forEntityName: "FailedBankDetails", into: context)
                    // Scattered over about 25 years, so the sort by date has work to do.
                    let day = Double((number &* 7_919) % 9_000)
                    details.setValue(firstDay.addingTimeInterval(day * 86_400), forKey: "closeDate")
                    details.setValue(firstDay.addingTimeInterval((day + Double(number % 400)) * 86_400), forKey: "updatedDate")
                    details.setValue(Int32(10_000 + (number &* 104_729) % 89_999), forKey: "zip")
                    info.setValue(details, forKey: "details")
                }
                try context.save()
                context.reset()
                written = min(written + chunkSize, count)
                progress(written)
            }
        }
    }
}
