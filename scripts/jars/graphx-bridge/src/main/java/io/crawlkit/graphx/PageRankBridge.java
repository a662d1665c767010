package io.crawlkit.graphx;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.graphx.Edge;
import org.apache.spark.graphx.Graph;
import org.apache.spark.graphx.lib.PageRank;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.storage.StorageLevel;
import scala.Option;
import scala.Tuple2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * GraphX PageRank for DataFrames, called from Python through py4j (crawlkit.scoring.pagerank,
 * engine "graphx"). It is what GraphFrames' pageRank runs, without GraphFrames: GraphX's
 * {@code PageRank.runUntilConvergenceWithOptions} (with a tolerance) or
 * {@code PageRank.runWithOptions} (a fixed number of iterations).
 *
 * <p>GraphX computes R = resetProb + (1 - resetProb) * sum R(q)/c(q); pages without out-links
 * send nothing (their rank leaks) and at the end the ranks are rescaled to sum N, or 1 when
 * personalized with a source page.
 */
public final class PageRankBridge {

    private PageRankBridge() {
    }

    private static final StructType RANKS = new StructType()
            .add("id", DataTypes.LongType, false)
            .add("rank", DataTypes.DoubleType, false);

    /**
     * @param vertices  (id long): every page, pages without links included
     * @param edges     (src long, dst long): distinct links, no self-links
     * @param tol       per-vertex change at which a vertex stops sending (N scale); if
     *                  {@code tol <= 0} the iteration count {@code maxIter} is run instead
     * @param resetProb 1 - damping
     * @param maxIter   iterations when {@code tol <= 0} (GraphX caps nothing when it runs to a
     *                  tolerance)
     * @param sourceId  personalize on this page id; negative = uniform
     * @return (id long, rank double), materialized (local checkpoint); the graph is unpersisted
     */
    public static Dataset<Row> pageRank(Dataset<Row> vertices, Dataset<Row> edges, double tol,
                                        double resetProb, int maxIter, long sourceId) {
        SparkSession spark = edges.sparkSession();
        ClassTag<Integer> intTag = ClassTag$.MODULE$.apply(Integer.class);
        JavaRDD<Tuple2<Object, Integer>> vs = vertices.select("id").javaRDD()
                .map(r -> new Tuple2<Object, Integer>(r.getLong(0), 0));
        JavaRDD<Edge<Integer>> es = edges.select("src", "dst").javaRDD()
                .map(r -> new Edge<Integer>(r.getLong(0), r.getLong(1), 1));
        Graph<Integer, Integer> graph = Graph.apply(vs.rdd(), es.rdd(), 0,
                StorageLevel.MEMORY_ONLY(), StorageLevel.MEMORY_ONLY(), intTag, intTag);
        Option<Object> source = sourceId < 0 ? Option.empty() : Option.apply((Object) sourceId);
        Graph<Object, Object> ranks = tol > 0
                ? PageRank.runUntilConvergenceWithOptions(graph, tol, resetProb, source, intTag, intTag)
                : PageRank.runWithOptions(graph, maxIter, resetProb, source, intTag, intTag);
        JavaRDD<Row> rows = ranks.vertices().toJavaRDD()
                .map(t -> RowFactory.create(t._1(), t._2()));
        Dataset<Row> out = spark.createDataFrame(rows, RANKS).localCheckpoint(true);
        ranks.unpersist(false);
        graph.unpersist(false);
        return out;
    }

}
