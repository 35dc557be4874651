import Foundation
import OpenCoreData
import Testing

final class KPVenue: NSManagedObject {
    @Managed var name: String?
    @Managed var specialCount: Int32
    @Managed var favorite: Bool
    @Managed var priceInfo: KPPrice?
}

final class KPPrice: NSManagedObject {
    @Managed var priceCategory: String?
    @Managed var venue: KPVenue?
}

/// Swift key paths, Foundation `SortDescriptor` and `#Predicate` on managed object classes.
@Suite struct SwiftKeyPathTests {
    private func context() throws -> NSManagedObjectContext {
        let model = try TestSupport.model("bubbletea", "BubbleTeaFinder")
        model.entitiesByName["Venue"]!.managedObjectClassName = "KPVenue"
        model.entitiesByName["PriceInfo"]!.managedObjectClassName = "KPPrice"
        let (coordinator, _) = try TestSupport.coordinator(model)
        let context = TestSupport.context(coordinator)
        for (name, deals, price) in [("Boba", 2, "$$"), ("Chai", 0, "$"), ("Taro", 5, "$"), ("Matcha", 1, nil)] {
            let venue = KPVenue(context: context)
            venue.name = name
            venue.specialCount = Int32(deals)
            if let price {
                let info = KPPrice(context: context)
                info.priceCategory = price
                venue.priceInfo = info
            }
        }
        try context.save()
        return context
    }

    @Test func keyPathNames() throws {
        let context = try context()  // the model must be in use for its classes to be found
        defer { withExtendedLifetime(context) {} }
        #expect(KeyPathNames.name(of: \KPVenue.specialCount) == "specialCount")
        #expect(KeyPathNames.name(of: \KPVenue.priceInfo?.priceCategory) == "priceInfo.priceCategory")
        #expect(NSSortDescriptor(keyPath: \KPVenue.name, ascending: false).key == "name")
    }

    @Test func sortDescriptorsFromKeyPaths() throws {
        let context = try context()
        let request = NSFetchRequest<KPVenue>(entityName: "Venue")
        request.sortDescriptors = [NSSortDescriptor(keyPath: \KPVenue.specialCount, ascending: false)]
        #expect(try context.fetch(request).map(\.name) == ["Taro", "Boba", "Matcha", "Chai"])
        request.setSortDescriptors([SortDescriptor(\KPVenue.priceInfo?.priceCategory), SortDescriptor(\KPVenue.name, order: .reverse)])
        #expect(request.sortDescriptors?.map(\.key) == ["priceInfo.priceCategory", "name"])
        #expect(try context.fetch(request).map(\.name) == ["Matcha", "Taro", "Chai", "Boba"])
    }

    @Test func foundationPredicates() throws {
        let context = try context()
        func names(_ predicate: Predicate<KPVenue>) throws -> [String?] {
            let request = NSFetchRequest<KPVenue>(entityName: "Venue")
            request.predicate = NSPredicate(predicate)
            request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
            return try context.fetch(request).map(\.name)
        }
        #expect(try names(#Predicate { $0.specialCount > 1 }) == ["Boba", "Taro"])
        #expect(try names(#Predicate { $0.specialCount >= 1 && $0.name != "Boba" }) == ["Matcha", "Taro"])
        #expect(try names(#Predicate { !($0.specialCount == 0) || $0.name == "Chai" }) == ["Boba", "Chai", "Matcha", "Taro"])
        #expect(try names(#Predicate { $0.priceInfo?.priceCategory == "$" }) == ["Chai", "Taro"])
        #expect(try names(#Predicate { $0.priceInfo == nil }) == ["Matcha"])
        let predicate = NSPredicate(#Predicate<KPVenue> { $0.specialCount > 1 })
        #expect(predicate.predicateFormat == "specialCount > 1")
    }
}
