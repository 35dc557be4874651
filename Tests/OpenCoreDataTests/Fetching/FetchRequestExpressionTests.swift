import Foundation
import OpenCoreData
import Testing

/// `NSFetchRequestExpression`: an expression whose value is a fetch's results or their count, its
/// request and context given by expressions evaluated first.
@Suite struct FetchRequestExpressionTests {
    /// A context on a fresh store holding departments named `names`, with unsaved changes too.
    private static func departments(_ names: [String]) throws -> NSManagedObjectContext {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        for name in names { NSEntityDescription.insertNewObject(forEntityName: "Department", into: context).setValue(name, forKey: "name") }
        try context.save()
        NSEntityDescription.insertNewObject(forEntityName: "Department", into: context).setValue("Unsaved", forKey: "name")
        return context
    }

    @Test func aFetchExpressionGivesTheResultsAndACountOnlyOneTheirNumber() throws {
        let context = try Self.departments(["Sales", "Support", "Research"])
        let request = NSFetchRequest<NSManagedObject>(entityName: "Department")
        request.predicate = NSPredicate(format: "name BEGINSWITH 'S' OR name == 'Unsaved'")
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        let fetch = NSFetchRequestExpression.expression(forFetch: NSExpression(forConstantValue: request),
                                                        context: NSExpression(forConstantValue: context), countOnly: false)
        let count = NSFetchRequestExpression.expression(forFetch: NSExpression(forConstantValue: request),
                                                        context: NSExpression(forConstantValue: context), countOnly: true)
        let expression = try #require(fetch as? NSFetchRequestExpression)
        #expect(!expression.isCountOnlyRequest)
        #expect((count as? NSFetchRequestExpression)?.isCountOnlyRequest == true)
        #expect(expression.requestExpression.constantValue as? NSFetchRequest<NSManagedObject> === request)
        #expect(expression.contextExpression.constantValue as? NSManagedObjectContext === context)

        let objects = try #require(fetch.expressionValue(with: nil, context: nil) as? [NSManagedObject])
        #expect(objects.map { $0.value(forKey: "name") as? String } == ["Sales", "Support", "Unsaved"],
                "the fetch includes the context's unsaved objects, as context.fetch does")
        #expect((count.expressionValue(with: nil, context: nil) as? NSNumber)?.intValue == 3)
    }

    @Test func itsPartsAreExpressionsEvaluatedFirst() throws {
        let context = try Self.departments(["Sales", "Support"])
        let request = NSFetchRequest<NSFetchRequestResult>(entityName: "Department")
        let count = NSFetchRequestExpression.expression(forFetch: NSExpression(forVariable: "REQUEST"),
                                                        context: NSExpression(forKeyPath: "managedObjectContext"), countOnly: true)
        let department = try #require(context.registeredObjects.first)
        let variables = NSMutableDictionary(dictionary: ["REQUEST": request])
        #expect((count.expressionValue(with: department, context: variables) as? NSNumber)?.intValue == 3)
        // In a predicate, evaluated against an object.
        let predicate = NSComparisonPredicate(leftExpression: count, rightExpression: NSExpression(forConstantValue: 3),
                                              modifier: .direct, type: .equalTo, options: [])
        #expect(predicate.evaluate(with: department, substitutionVariables: ["REQUEST": request]))
    }

    @Test func partsThatAreNoRequestAndContextGiveNil() throws {
        let context = try Self.departments(["Sales"])
        let wrong = NSFetchRequestExpression.expression(forFetch: NSExpression(forConstantValue: "Department"),
                                                        context: NSExpression(forConstantValue: context), countOnly: true)
        #expect(wrong.expressionValue(with: nil, context: nil) == nil)
        let unknownEntity = NSFetchRequestExpression.expression(forFetch: NSExpression(forConstantValue: NSFetchRequest<NSManagedObject>(entityName: "Nothing")),
                                                                context: NSExpression(forConstantValue: context), countOnly: false)
        #expect(unknownEntity.expressionValue(with: nil, context: nil) == nil, "a fetch that fails gives nil")
    }

    /// In a fetch request's own predicate the store can't run it in SQL: the fetch throws
    /// Core Data's unsupported-request error instead of answering wrongly.
    @Test func aFetchWhosePredicateHoldsOneIsRefused() throws {
        let context = try Self.departments(["Sales"])
        let count = NSFetchRequestExpression.expression(forFetch: NSExpression(forConstantValue: NSFetchRequest<NSManagedObject>(entityName: "Department")),
                                                        context: NSExpression(forConstantValue: context), countOnly: true)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Department")
        request.predicate = NSComparisonPredicate(leftExpression: count, rightExpression: NSExpression(forConstantValue: 2),
                                                  modifier: .direct, type: .equalTo, options: [])
        #expect {
            try context.fetch(request)
        } throws: { error in
            (error as NSError).domain == NSCocoaErrorDomain && (error as NSError).code == 134091
        }
    }
}
