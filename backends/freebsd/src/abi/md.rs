//! The machine-dependent part of PMCALLOCATE (`union pmc_md_op_pmcallocate`
//! of sys/amd64/include/pmc_mdep.h and sys/arm64/include/pmc_mdep.h), with
//! the per-class structures of hwpmc_{amd,core,uncore,cmn600,dmc620}.h.

/// `struct pmc_md_amd_op_pmcallocate` (hwpmc_amd.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_amd_op_pmcallocate {
    /// Event select register value.
    pub pm_amd_config: u64,
    /// `enum sub_class`: core, L3, data fabric.
    pub pm_amd_sub_class: u32,
}

/// `enum sub_class` values of hwpmc_amd.h.
pub const PMC_AMD_SUB_CLASS_CORE: u32 = 0;
/// L3 cache counters.
pub const PMC_AMD_SUB_CLASS_L3_CACHE: u32 = 1;
/// Data-fabric counters.
pub const PMC_AMD_SUB_CLASS_DATA_FABRIC: u32 = 2;

/// `struct pmc_md_iap_op_pmcallocate` (hwpmc_core.h): used by IAP and IAF.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_iap_op_pmcallocate {
    /// Event select value (`IAP_*` bits).
    pub pm_iap_config: u64,
    /// Offcore response MSR value.
    pub pm_iap_rsp: u64,
}

/// `struct pmc_md_ucf_op_pmcallocate` (hwpmc_uncore.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_ucf_op_pmcallocate {
    /// Additional flags.
    pub pm_ucf_flags: u16,
}

/// `struct pmc_md_ucp_op_pmcallocate` (hwpmc_uncore.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_ucp_op_pmcallocate {
    /// Event select value.
    pub pm_ucp_config: u32,
}

/// `struct pmc_md_cmn600_pmu_op_pmcallocate` (hwpmc_cmn600.h, arm64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_cmn600_pmu_op_pmcallocate {
    /// Node id.
    pub pma_cmn600_nodeid: u64,
    /// Occupancy filter.
    pub pma_cmn600_occupancy: u64,
    /// Port/channel configuration.
    pub pma_cmn600_config: u32,
}

/// `struct pmc_md_dmc620_pmu_op_pmcallocate` (hwpmc_dmc620.h, arm64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_dmc620_pmu_op_pmcallocate {
    /// Match value.
    pub pm_dmc620_match: u64,
    /// Mask value.
    pub pm_dmc620_mask: u64,
    /// Configuration.
    pub pm_dmc620_config: u32,
}

/// `union pmc_md_op_pmcallocate` of amd64 (sys/amd64/include/pmc_mdep.h):
/// `pm_amd`, `pm_iap`, `pm_ucf`, `pm_ucp` and `uint64_t __pad[4]`.
///
/// Kept as the 32 raw bytes of the union (8-aligned) with typed accessors,
/// so no `unsafe` union read is needed.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_op_pmcallocate_amd64 {
    /// `uint64_t __pad[4]`: the union's storage.
    pub pad: [u64; 4],
}

impl pmc_md_op_pmcallocate_amd64 {
    /// Reads `pm_amd`.
    pub fn amd(&self) -> pmc_md_amd_op_pmcallocate {
        pmc_md_amd_op_pmcallocate {
            pm_amd_config: self.pad[0],
            pm_amd_sub_class: self.pad[1] as u32,
        }
    }
    /// Writes `pm_amd` (the rest of the union is zeroed, as `bzero` would).
    pub fn set_amd(&mut self, amd: pmc_md_amd_op_pmcallocate) {
        self.pad = [amd.pm_amd_config, u64::from(amd.pm_amd_sub_class), 0, 0];
    }
    /// Reads `pm_iap`.
    pub fn iap(&self) -> pmc_md_iap_op_pmcallocate {
        pmc_md_iap_op_pmcallocate {
            pm_iap_config: self.pad[0],
            pm_iap_rsp: self.pad[1],
        }
    }
    /// Writes `pm_iap`.
    pub fn set_iap(&mut self, iap: pmc_md_iap_op_pmcallocate) {
        self.pad = [iap.pm_iap_config, iap.pm_iap_rsp, 0, 0];
    }
}

/// `union pmc_md_op_pmcallocate` of arm64 (sys/arm64/include/pmc_mdep.h):
/// an anonymous `{ uint32_t pm_md_config; }`, `pm_cmn600`, `pm_dmc620`
/// and `uint64_t __pad[4]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_op_pmcallocate_arm64 {
    /// `uint64_t __pad[4]`: the union's storage.
    pub pad: [u64; 4],
}

impl pmc_md_op_pmcallocate_arm64 {
    /// Reads `pm_md_config` (the first 4 bytes, in native byte order).
    pub fn md_config(&self) -> u32 {
        let bytes = self.pad[0].to_ne_bytes();
        u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    }
    /// Writes `pm_md_config`, leaving the other bytes as they are.
    pub fn set_md_config(&mut self, config: u32) {
        let mut bytes = self.pad[0].to_ne_bytes();
        bytes[..4].copy_from_slice(&config.to_ne_bytes());
        self.pad[0] = u64::from_ne_bytes(bytes);
    }
}

/// The union of the target this crate is built for: arm64's on aarch64,
/// amd64's everywhere else (both are 32 bytes, 8-aligned, so the
/// surrounding structure is the same size on every 64-bit target).
#[cfg(target_arch = "aarch64")]
pub type pmc_md_op_pmcallocate = pmc_md_op_pmcallocate_arm64;
/// The union of the target this crate is built for (see the aarch64 note).
#[cfg(not(target_arch = "aarch64"))]
pub type pmc_md_op_pmcallocate = pmc_md_op_pmcallocate_amd64;

/// The machine-dependent union as the byte layout of either architecture;
/// `pmc_op_pmcallocate` carries it so the event mapping of both
/// architectures is testable on any host.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_union {
    /// `uint64_t __pad[4]`.
    pub pad: [u64; 4],
}

impl pmc_md_union {
    /// The amd64 view.
    pub fn amd64(&self) -> pmc_md_op_pmcallocate_amd64 {
        pmc_md_op_pmcallocate_amd64 { pad: self.pad }
    }
    /// Stores an amd64 view.
    pub fn set_amd64(&mut self, md: pmc_md_op_pmcallocate_amd64) {
        self.pad = md.pad;
    }
    /// The arm64 view.
    pub fn arm64(&self) -> pmc_md_op_pmcallocate_arm64 {
        pmc_md_op_pmcallocate_arm64 { pad: self.pad }
    }
    /// Stores an arm64 view.
    pub fn set_arm64(&mut self, md: pmc_md_op_pmcallocate_arm64) {
        self.pad = md.pad;
    }
}
