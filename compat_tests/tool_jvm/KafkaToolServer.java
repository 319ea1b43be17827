/*
 * A resident JVM for Kafka's command-line tools (compat_tests/tool_jvm.py starts it and talks
 * to it): each request names a tool's main class, its arguments and its whole stdin; the JVM
 * runs that main on a fresh thread and sends back what the tool wrote to System.out and
 * System.err, as it writes it, then its exit code. One JVM serves a test process's tools one
 * after another, so that each tool run costs its own work and not a JVM start, class loading and
 * compilation (about 0.9 s of CPU per run on the suite's machine).
 *
 * What a fresh JVM gives a tool and how it is kept here:
 * - exit codes: Kafka's tools leave through Kafka's Exit class (org.apache.kafka.common.utils
 *   .internals.Exit from 4.4, ...common.utils.Exit before); its exit and halt procedures are
 *   replaced by one that ends the run with that code: the first exit's code is the run's, and
 *   what the tool's main thread prints after it is dropped (some tools catch Throwable around
 *   code that exits, where a fresh JVM would already be gone). A main that returns gives 0; an uncaught
 *   exception is printed as the JVM prints it and gives 1. A tool that calls System.exit ends
 *   this JVM, and the parent reads the code from the process (tool_jvm.py then starts another).
 * - shutdown hooks added through Exit.addShutdownHook run when the run ends, as they would at
 *   the JVM's exit, and the run ends when they have (the parent's timeout bounds a hook that hangs).
 * - nothing of a run may outlive it: threads the run started (its clients' network threads)
 *   must end within a grace period after it; otherwise the reply says "tainted" and this JVM
 *   halts right after it, so that no client of an old run stays connected to a broker.
 * - the streams: System.in is the request's bytes (EOF after them, as with /dev/null); System.out
 *   and System.err are installed once, before any logging starts, and forward to the current
 *   run (between runs, to this JVM's own stderr, which the parent sends to a log file).
 *
 * Wire (on this JVM's own stdin/stdout): strings and byte strings are an int32 length and
 * UTF-8 bytes. Request: main class, argc, args..., stdin bytes. Reply frames: 'o' bytes
 * (stdout), 'e' bytes (stderr), then 'x' int32 exit code, byte tainted (0/1).
 *
 * Written for this project; compiled by `make kafka-tool-jvm` (or on first use) with the JDK
 * alone: Kafka's classes are reached by reflection, so one build serves every Kafka release.
 */

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

public final class KafkaToolServer {
    /** Thrown by the replaced exit procedure on the tool's main thread: ends the run. */
    static final class ToolExit extends Error {
        final int code;

        ToolExit(int code) {
            super("exit " + code, null, false, false);
            this.code = code;
        }
    }

    private static final long GRACE_MS = 3000;
    private static final Object CHANNEL_LOCK = new Object();
    private static DataOutputStream channel;
    private static PrintStream ownErr;
    private static volatile boolean inRun;
    private static volatile Thread toolMain;
    /** The first exit code of the run: the tool ended there (later exits and output are moot). */
    private static volatile Integer exitCode;
    private static final List<Runnable> HOOKS = new ArrayList<>();

    /** System.out / System.err: frames to the parent during a run, our stderr between runs. */
    static final class Forward extends OutputStream {
        private final byte kind;

        Forward(char kind) {
            this.kind = (byte) kind;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return;
            }
            if (exitCode != null && Thread.currentThread() == toolMain) {
                return;         // a fresh JVM would have stopped at the exit
            }
            if (!inRun) {
                ownErr.write(b, off, len);
                ownErr.flush();
                return;
            }
            synchronized (CHANNEL_LOCK) {
                channel.writeByte(kind);
                channel.writeInt(len);
                channel.write(b, off, len);
                channel.flush();
            }
        }
    }

    public static void main(String[] argv) throws Exception {
        DataInputStream requests = new DataInputStream(new BufferedInputStream(new FileInputStream(FileDescriptor.in)));
        channel = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16));
        ownErr = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
        System.setOut(new PrintStream(new Forward('o'), true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(new Forward('e'), true, StandardCharsets.UTF_8));
        trapExit();
        Set<Thread> baseline = liveThreads();
        while (true) {
            String main;
            try {
                main = readString(requests);
            } catch (EOFException eof) {
                Runtime.getRuntime().halt(0);   // the parent closed the pipe: done
                return;
            }
            int argc = requests.readInt();
            String[] args = new String[argc];
            for (int i = 0; i < argc; i++) {
                args[i] = readString(requests);
            }
            byte[] stdin = readBytes(requests);
            int code = runTool(main, args, stdin);
            Set<String> leaked = leftovers(baseline);
            if (!leaked.isEmpty()) {
                ownErr.println("tool-jvm: " + main + " left threads " + leaked + "; halting");
            }
            synchronized (CHANNEL_LOCK) {
                inRun = false;
                channel.writeByte('x');
                channel.writeInt(code);
                channel.writeByte(leaked.isEmpty() ? 0 : 1);
                channel.flush();
            }
            if (!leaked.isEmpty()) {
                Runtime.getRuntime().halt(0);
            }
        }
    }

    private static int runTool(String mainClass, String[] args, byte[] stdin) throws InterruptedException {
        System.setIn(new ByteArrayInputStream(stdin));
        synchronized (HOOKS) {
            HOOKS.clear();
        }
        int[] code = {0};
        exitCode = null;
        Set<Thread> before = liveThreads();
        inRun = true;
        Thread main = new Thread(() -> {
            try {
                Method m = Class.forName(mainClass).getMethod("main", String[].class);
                m.invoke(null, (Object) args);
            } catch (InvocationTargetException e) {
                code[0] = outcome(e.getCause());
            } catch (Throwable e) {
                code[0] = outcome(e);
            }
        }, "main");
        toolMain = main;
        main.start();
        main.join();
        toolMain = null;
        if (exitCode != null) {
            code[0] = exitCode;
        }
        // a fresh JVM waits for the tool's other non-daemon threads before it exits
        for (Thread t : liveThreads()) {
            if (!t.isDaemon() && !before.contains(t) && !jvmOwn(t)) {
                t.join();
            }
        }
        runHooks();
        System.out.flush();
        System.err.flush();
        return code[0];
    }

    private static int outcome(Throwable e) {
        if (e instanceof ToolExit) {
            return ((ToolExit) e).code;
        }
        System.err.print("Exception in thread \"main\" ");
        e.printStackTrace(System.err);
        return 1;
    }

    private static void runHooks() throws InterruptedException {
        List<Runnable> hooks;
        synchronized (HOOKS) {
            hooks = new ArrayList<>(HOOKS);
            HOOKS.clear();
        }
        List<Thread> threads = new ArrayList<>();
        for (Runnable hook : hooks) {
            Thread t = new Thread(hook, "shutdown-hook");
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();           // as the JVM waits for its hooks (a producer's close sends what it holds)
        }
    }

    /** Kafka's Exit: exit and halt end the run (or, off the tool's main thread, this JVM). */
    private static void trapExit() throws Exception {
        Class<?> exit = null;
        for (String name : new String[] {"org.apache.kafka.common.utils.internals.Exit",
                                         "org.apache.kafka.common.utils.Exit"}) {
            try {
                exit = Class.forName(name);
                break;
            } catch (ClassNotFoundException e) {
                // the other release's name
            }
        }
        if (exit == null) {
            throw new IllegalStateException("no Kafka Exit class on the class path");
        }
        Class<?> procedure = Class.forName(exit.getName() + "$Procedure");
        Class<?> adder = Class.forName(exit.getName() + "$ShutdownHookAdder");
        Object trap = Proxy.newProxyInstance(procedure.getClassLoader(), new Class<?>[] {procedure},
            (proxy, method, a) -> {
                if (method.getDeclaringClass() == Object.class) {
                    return objectMethod(proxy, method, a);
                }
                int code = (Integer) a[0];
                if (Thread.currentThread() == toolMain && exitCode == null) {
                    exitCode = code;
                }
                if (Thread.currentThread() != toolMain) {
                    // exit from another thread ends a fresh JVM at once: do the same
                    runHooks();
                    System.out.flush();
                    System.err.flush();
                    synchronized (CHANNEL_LOCK) {
                        channel.flush();
                    }
                    Runtime.getRuntime().halt(code);
                }
                throw new ToolExit(code);
            });
        Object hooks = Proxy.newProxyInstance(adder.getClassLoader(), new Class<?>[] {adder},
            (proxy, method, a) -> {
                if (method.getDeclaringClass() == Object.class) {
                    return objectMethod(proxy, method, a);
                }
                synchronized (HOOKS) {
                    HOOKS.add((Runnable) a[1]);
                }
                return null;
            });
        exit.getMethod("setExitProcedure", procedure).invoke(null, trap);
        exit.getMethod("setHaltProcedure", procedure).invoke(null, trap);
        exit.getMethod("setShutdownHookAdder", adder).invoke(null, hooks);
    }

    private static Object objectMethod(Object proxy, Method method, Object[] a) {
        switch (method.getName()) {
            case "equals":
                return proxy == a[0];
            case "hashCode":
                return System.identityHashCode(proxy);
            default:
                return "KafkaToolServer trap";
        }
    }

    private static Set<Thread> liveThreads() {
        return new HashSet<>(Thread.getAllStackTraces().keySet());
    }

    /** Threads started during the run that are still alive after a grace period. */
    private static Set<String> leftovers(Set<Thread> baseline) throws InterruptedException {
        long deadline = System.currentTimeMillis() + GRACE_MS;
        while (true) {
            Set<String> names = new HashSet<>();
            for (Thread t : liveThreads()) {
                if (!baseline.contains(t) && t != Thread.currentThread() && !jvmOwn(t)) {
                    names.add(t.getName());
                }
            }
            if (names.isEmpty() || System.currentTimeMillis() >= deadline) {
                return names;
            }
            Thread.sleep(20);
        }
    }

    /** Threads the JDK starts lazily for itself (not a tool's). */
    private static boolean jvmOwn(Thread t) {
        String n = t.getName();
        return n.equals("Attach Listener") || n.equals("process reaper") || n.equals("Common-Cleaner")
            || n.startsWith("ForkJoinPool.commonPool") || n.equals("Signal Dispatcher")
            || n.equals("Notification Thread") || n.equals("Finalizer") || n.equals("Reference Handler")
            || n.startsWith("RMI ") || n.equals("JMX server connection timeout");
    }

    private static String readString(DataInputStream in) throws IOException {
        return new String(readBytes(in), StandardCharsets.UTF_8);
    }

    private static byte[] readBytes(DataInputStream in) throws IOException {
        int len = in.readInt();
        byte[] b = new byte[len];
        in.readFully(b);
        return b;
    }
}
