"""What happens: shared-memory bytes, swizzles, TMA box copies, mbarrier state, WGMMA operand
fetch and the MMA, bank-conflict wavefronts. numpy only; never imports simpy."""
