// Anchor translation unit for the shared precompiled header target.
int tl_pch_anchor() { return 0; }
