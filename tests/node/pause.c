/*
 * The pod sandbox ("pause") process of the test node's images (tests/node/build.sh): it holds the
 * pod's namespaces and exits on SIGTERM/SIGINT, reaping orphans meanwhile, like Kubernetes' own
 * pause. Written here because the test node has no internet to pull registry.k8s.io/pause.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {.sa_handler = quit};
  struct sigaction child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
  sigaction(SIGTERM, &stop, NULL);
  sigaction(SIGINT, &stop, NULL);
  sigaction(SIGCHLD, &child, NULL);
  for (;;) pause();
}
