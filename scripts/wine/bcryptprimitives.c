#include <windows.h>
/* A stand-in for Windows 10's bcryptprimitives.dll, which Wine 8.0 lacks:
   only ProcessPrng, as the Go runtime (>= 1.22) loads it at start. Test use only. */
typedef BOOLEAN (WINAPI *genrandom)(PVOID, ULONG);
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  static genrandom f;
  if (!f) f = (genrandom)GetProcAddress(LoadLibraryA("advapi32.dll"), "SystemFunction036");
  while (len > 0) {
    ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
    if (!f(data, n)) return FALSE;
    data += n; len -= n;
  }
  return TRUE;
}
