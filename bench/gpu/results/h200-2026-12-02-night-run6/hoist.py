import re, sys, shutil, os
src, dst, mode = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.copytree(src, dst)
p = os.path.join(dst, 'kernel.cu'); s = open(p).read()
if 'swap' in mode:
    a = '  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");\n  asm volatile("griddepcontrol.wait;" ::: "memory");\n'
    b = '  asm volatile("griddepcontrol.wait;" ::: "memory");\n  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");\n'
    assert a in s; s = s.replace(a, b)
if 'hoist' in mode:
    i = s.index('_k1(')
    head, k1 = s[:i], s[i:]
    m = re.search(r'F16ToF32\(t_B\[\(0LL \+ r\) \* 4096LL \+ \(long long\)bx \* (\d+)LL \+ i1\]\)', k1)
    nt = m.group(1)
    k1 = k1.replace(m.group(0), 'bv[r]')
    k1 = k1.replace('  prism_dev::PdlPrologue();  // programmatic dependent launch: after the previous grid\n', '', 1)
    anchor = '  (void)bx; (void)by; (void)bz;\n'
    pre = ('  float bv[16];  // B: a program input, read before the wait\n  {\n    const int i1 = first %% %s;\n#pragma unroll\n'
           '    for (int r = 0; r < 16; ++r) bv[r] = prism_dev::F16ToF32(t_B[(0LL + r) * 4096LL + (long long)bx * %sLL + i1]);\n  }\n'
           '  prism_dev::PdlPrologue();\n') % (nt, nt)
    k1 = k1.replace(anchor, anchor + pre, 1)
    s = head + k1
open(p, 'w').write(s)
