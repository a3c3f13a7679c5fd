import HubCore

extension FCMMessage {
    /// The exact `messages:send` body for this message: `{"message": {…}, "validate_only": true}`
    /// (`validate_only` only when asked), with FCM's snake_case field names and `data` keys sorted.
    ///
    /// Written by hand rather than with `JSONEncoder`: it runs once per send, and this is the
    /// transport's hot path.
    public func requestBody(validateOnly: Bool = false) -> [UInt8] {
        var json = JSONWriter()
        json.object { json in
            json.key("message")
            json.object { json in
                switch target {
                case .token(let token): json.member("token", token)
                case .topic(let topic): json.member("topic", topic)
                case .condition(let condition): json.member("condition", condition)
                }
                if !data.isEmpty {
                    json.key("data")
                    json.object { json in
                        for (key, value) in data.sorted(by: { $0.key < $1.key }) {
                            json.key(key)
                            json.string(value)
                        }
                    }
                }
                if let notification {
                    json.key("notification")
                    json.object { json in
                        json.member("title", notification.title)
                        json.member("body", notification.body)
                        json.member("image", notification.image)
                    }
                }
                if let android {
                    json.key("android")
                    json.object { json in
                        json.member("priority", android.priority?.rawValue)
                        json.member("ttl", android.ttlText)
                        json.member("collapse_key", android.collapseKey)
                        json.member("restricted_package_name", android.restrictedPackageName)
                        if let notification = android.notification {
                            json.key("notification")
                            json.object { json in
                                json.member("tag", notification.tag)
                                json.member("channel_id", notification.channelID)
                                json.member("title_loc_key", notification.titleLocKey)
                                json.members("title_loc_args", notification.titleLocArgs.nilIfEmpty)
                                json.member("body_loc_key", notification.bodyLocKey)
                                json.members("body_loc_args", notification.bodyLocArgs.nilIfEmpty)
                                json.member("notification_count", notification.notificationCount)
                            }
                        }
                    }
                }
            }
            if validateOnly {
                json.key("validate_only")
                json.bool(true)
            }
        }
        return json.bytes
    }
}

extension Array {
    /// `nil` when empty: FCM's arrays are left out rather than sent empty.
    fileprivate var nilIfEmpty: Self? { isEmpty ? nil : self }
}
