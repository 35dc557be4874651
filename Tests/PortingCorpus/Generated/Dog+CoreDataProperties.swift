//
//  Dog+CoreDataProperties.swift
//  Kennel
//
//  This file was generated and should not be edited.
//

import Foundation
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif


extension Dog {

    @nonobjc public class func fetchRequest() -> NSFetchRequest<Dog> {
        return NSFetchRequest<Dog>(entityName: "Dog")
    }

    @Managed public var birthday: Date?
    @Managed public var chipID: UUID?
    @Managed public var isGoodBoy: Bool
    @Managed public var name: String
    @Managed public var weight: Double
    @Managed public var owner: Owner?
    @Managed public var walks: NSOrderedSet?

}

// MARK: Generated accessors for walks
extension Dog {

}

extension Dog : Identifiable {

}
