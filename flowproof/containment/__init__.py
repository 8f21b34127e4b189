"""What the operating system can do to keep an agent in bounds, behind one façade per
capability: each answers on every platform, doing nothing where the kernel offers nothing.
Containment is told what to allow (a resolved policy); it never reads a spec."""
