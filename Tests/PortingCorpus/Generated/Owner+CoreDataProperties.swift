//
//  Owner+CoreDataProperties.swift
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


extension Owner {

    @nonobjc public class func fetchRequest() -> NSFetchRequest<Owner> {
        return NSFetchRequest<Owner>(entityName: "Owner")
    }

    @Managed public var age: NSNumber?
    @Managed public var email: String?
    @Managed public var isVerified: NSNumber?
    @Managed public var name: String?
    @Managed public var rating: NSNumber?
    @Managed public var balance: NSDecimalNumber?
    @Managed public var dogs: NSSet?

}

// MARK: Generated accessors for dogs
extension Owner {

}

extension Owner : Identifiable {

}
