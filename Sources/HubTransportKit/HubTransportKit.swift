// HubTransportKit: what a transport needs, in one import. It re-exports HubCore (the `Transport`
// and `TransportPlugin` protocols, `OutboundDelivery`, `DeliveryOutcome`, `RetryAfter`,
// `JSONWriter`, `ProviderURL`, `HostAllowList`, the hub's clock) and adds the helpers every
// first-party transport uses (DeliveryHelpers.swift). Public and documented: an outside author's
// transport uses nothing else of the hub's.
@_exported public import HubCore
