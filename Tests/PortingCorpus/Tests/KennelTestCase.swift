//
//  KennelTestCase.swift
//  KennelTests
//
//  What every Kennel test case starts from: a fresh test stack and its view context.
//

import XCTest
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

class KennelTestCase: XCTestCase {

    var coreDataStack: TestCoreDataStack!
    var context: NSManagedObjectContext!

    override func setUp() {
        super.setUp()
        coreDataStack = TestCoreDataStack()
        context = coreDataStack.persistentContainer.viewContext
    }

    override func tearDown() {
        coreDataStack = nil
        context = nil
        super.tearDown()
    }
}
