//! The Cost Explorer group-by pairs burnrate stores, each in its own fact table.

/// The fact tables, one per Cost Explorer group-by pair. The second column names the
/// dimension grouped with the project tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grain {
    ByUser,
    ByUsageType,
    ByService,
    /// Cost Explorer's RECORD_TYPE: usage apart from credits, refunds, tax and fees.
    ByRecordType,
    /// Each user tag's own credits (RECORD_TYPE `Credit` only): whose credit it is.
    ByUserCredit,
    /// Each user tag's own refunds (RECORD_TYPE `Refund` only).
    ByUserRefund,
    /// Each user tag's own tax (RECORD_TYPE `Tax` only).
    ByUserTax,
    /// Each user tag's own GPU spend (the account's GPU usage types only): whose GPU spend
    /// it is, credits on it included.
    ByUserGpu,
}

impl Grain {
    /// In the order a run asks for them: `ByUserGpu` after `ByUsageType`, whose usage types
    /// it is filtered to.
    pub const ALL: [Grain; 8] = [
        Grain::ByUser,
        Grain::ByUsageType,
        Grain::ByService,
        Grain::ByRecordType,
        Grain::ByUserCredit,
        Grain::ByUserRefund,
        Grain::ByUserTax,
        Grain::ByUserGpu,
    ];

    pub(super) fn table(self) -> &'static str {
        match self {
            Grain::ByUser => "costs_by_user",
            Grain::ByUsageType => "costs_by_usage_type",
            Grain::ByService => "costs_by_service",
            Grain::ByRecordType => "costs_by_record_type",
            Grain::ByUserCredit => "costs_by_user_credit",
            Grain::ByUserRefund => "costs_by_user_refund",
            Grain::ByUserTax => "costs_by_user_tax",
            Grain::ByUserGpu => "costs_by_user_gpu",
        }
    }

    /// The temporary table a streamed run gathers this grain in.
    pub(super) fn staging_table(self) -> &'static str {
        match self {
            Grain::ByUser => "staged_costs_by_user",
            Grain::ByUsageType => "staged_costs_by_usage_type",
            Grain::ByService => "staged_costs_by_service",
            Grain::ByRecordType => "staged_costs_by_record_type",
            Grain::ByUserCredit => "staged_costs_by_user_credit",
            Grain::ByUserRefund => "staged_costs_by_user_refund",
            Grain::ByUserTax => "staged_costs_by_user_tax",
            Grain::ByUserGpu => "staged_costs_by_user_gpu",
        }
    }

    pub(super) fn dimension_column(self) -> &'static str {
        match self {
            Grain::ByUser | Grain::ByUserCredit | Grain::ByUserRefund | Grain::ByUserTax | Grain::ByUserGpu => {
                "user_name"
            }
            Grain::ByUsageType => "usage_type",
            Grain::ByService => "service",
            Grain::ByRecordType => "record_type",
        }
    }

    /// The one record type a grain is filtered to; `None` for the grains of all spend.
    pub fn record_type(self) -> Option<&'static str> {
        match self {
            Grain::ByUserCredit => Some("Credit"),
            Grain::ByUserRefund => Some("Refund"),
            Grain::ByUserTax => Some("Tax"),
            _ => None,
        }
    }

    /// Whether the grain covers all spend (so its daily totals must equal the others'); the
    /// grains of one record type or of GPU usage types cover a part.
    pub fn whole(self) -> bool {
        self.record_type().is_none() && self != Grain::ByUserGpu
    }

    /// Whether the grain's groups are user tag values.
    pub fn by_user_tag(self) -> bool {
        self.dimension_column() == "user_name"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gpu_grain_is_asked_after_the_usage_type_grain_it_is_filtered_by() {
        let at = |grain: Grain| Grain::ALL.iter().position(|g| *g == grain);
        assert!(at(Grain::ByUsageType) < at(Grain::ByUserGpu));
        assert!(!Grain::ByUserGpu.whole() && Grain::ByUsageType.whole());
    }
}
