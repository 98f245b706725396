/*
** keep_dso.c -- preloaded (ASan builds only) into the visualizer's window
** test: dlclose() keeps every library mapped.
**
** Why: SDL loads video and input modules with dlopen() and unloads them in
** SDL_Quit(). LeakSanitizer runs at exit, when those modules are gone, so a
** one-time allocation that a module keeps in a global shows up as a leak
** from "<unknown module>" that no suppression can name (seen with this
** Debian's X11/Mesa stack: 128 bytes). With the modules kept mapped, their
** globals still reach such memory, and any leak of ours is still reported
** with its stack.
*/
int dlclose(void *handle);
int dlclose(void *handle) { (void)handle; return 0; }
